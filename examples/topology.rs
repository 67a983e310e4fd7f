//! Probes the multi-GPU topology: every device with its PCI bus id and NUMA node, the
//! peer matrix (access, performance rank, native atomics) from the driver, NVLinks
//! from NVML when it answers, each device's best peer, and the Graphviz DOT of it
//! all. With no GPU on the machine it shows softcuda's simulated devices, and says so
//! (`SOFTCUDA_DEVICES` and `SOFTCUDA_P2P` shape them; see docs/softcuda.md).
//!
//! `cargo run --example topology`, then e.g. `... | sed -n '/^digraph/,$p' | dot -Tsvg`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::topology::Topology;
use std::process::ExitCode;

fn main() -> ExitCode {
    common::main_with(|driver, soft| {
        // NVML describes the machine's real GPUs: of no use for softcuda's devices.
        let topology = if soft {
            Topology::probe(driver, None)?
        } else {
            Topology::probe_loading_nvml(driver)?
        };
        print!("{topology}");
        for d in topology.devices() {
            match topology.best_peer(d.ordinal)? {
                Some(p) => println!("best peer of {}: {p}", d.ordinal),
                None => println!("best peer of {}: none (no peer access)", d.ordinal),
            }
        }
        println!();
        print!("{}", topology.to_dot());
        Ok(())
    })
}
