// Package kfeature knows which kernel features Junction's drivers use,
// asks the running kernel for each one before anything relies on it, and
// says what Junction does without it.
//
// Kernels differ: distribution and cloud builds of one version refuse
// different BPF helpers (one Linux 6.18 build refuses bpf_xdp_adjust_meta
// in XDP programs, another takes it), older kernels lack tcx or BPF links
// for XDP, and some devices have no native XDP. So every feature is
// probed, once per process, the way bpftool feature probe does: a small
// program or map is loaded, or a system call made with arguments the
// kernel rejects differently when it knows the feature (mostly through
// cilium/ebpf's features package). What the drivers then do is in each
// Feature's Without: an optional accelerator the kernel cannot run is
// logged once, counted and shown, and the graph carries the traffic;
// only an explicit setting the kernel cannot honour is an error, naming
// the feature (Missing).
//
// # Emulating an older or stricter kernel
//
// JUNCTION_KERNEL_MISSING names features to treat as missing whatever
// the kernel says: a comma-separated list of feature names (Catalog), or
// "optional" for every feature Junction can do without. Every use of a
// feature asks Have, which honours it, so the degradation paths run on
// any kernel: the tests set it to check each one, and an operator can set
// it to rehearse a kernel they are moving to.
//
// # Tests
//
// Require skips a test that needs features this kernel lacks, naming
// them; with JUNCTION_REQUIRE_FEATURES=1 it fails instead, so that a
// machine meant to cover the fast path cannot pass without running it.
//
// forwarder features prints Report as a table or JSON.
package kfeature
