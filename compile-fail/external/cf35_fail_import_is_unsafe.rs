// CF35: importing external memory or a semaphore from a descriptor is `unsafe`: what
// the descriptor refers to, and who else uses it, is outside the crate's sight.
use oxicuda_driver::CurrentContext;
use std::os::fd::OwnedFd;

fn import(cur: &CurrentContext<'_>, fd: OwnedFd) {
    let _ = cur.import_external_memory(fd, 4096, false);
}

fn main() {}
