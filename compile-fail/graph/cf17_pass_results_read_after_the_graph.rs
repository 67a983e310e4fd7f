// CF17 twin: one node writes what the next reads (shared borrows for the graph's
// life); the host reads the results once the executable graph is gone.
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn run(cur: &CurrentContext<'_>) -> Result<Vec<u32>, CudaError> {
    let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let (a, b) = (cur.alloc::<u32>(16)?, cur.alloc::<u32>(16)?);
    let mut out = vec![0u32; 16];
    {
        let mut graph = cur.create_graph()?;
        let fill = graph.add_fill(&[], &a, 7u32)?;
        let copy = graph.add_copy(&[fill], &b, &a)?;
        graph.add_copy_to_host(&[copy], &mut out, &b)?;
        let exec = graph.instantiate()?;
        stream.scope(|s| s.launch_graph(&exec))??;
    }
    assert_eq!(out[0], 7);
    b.to_vec()
}

fn main() {}
