// Command pktgen sends 64-byte UDP frames through AF_XDP on N queues and
// counts what a sink interface receives: the traffic source and sink of the
// end-to-end benchmark (benchmarks/e2e-router.sh).
package main
