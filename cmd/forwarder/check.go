package main

import (
	"fmt"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"io"

	"github.com/junction-dataplane/junction/pipeline"
)

// checkCmd: forwarder check [-config FILE] [-strict] [-plugins]. It runs
// what run runs before starting (loading, then pipeline.CheckEnv) and
// adds the warnings of the drivers' checks (a fast path this kernel cannot
// run in full: run will step down) and of pipeline.Warnings. A Plugin's
// program is started (its handshake, its own config validation, its
// outputs) only with -plugins: checking a file must not execute what the
// file names.
func checkCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("check", stderr)
	config := fs.String("config", "", "graph file (default: the embedded default graph)")
	strict := fs.Bool("strict", false, "treat warnings as errors (exit status 1)")
	plugins := fs.Bool("plugins", false, "start the graph's Plugin programs to check their handshake, config and outputs, as run does")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path, err := configArg(fs, *config)
	if err != nil {
		return err
	}
	if !*plugins {
		defer withoutPlugins()()
	}
	g, err := loadGraph(path)
	if err != nil {
		return err
	}
	if err := kfeature.CheckEmulation(); err != nil {
		return err
	}
	ws, err := pipeline.CheckEnvWarn(g, 0)
	if err != nil {
		return err
	}
	ws = append(ws, pipeline.Warnings(g)...)
	if *strict && len(ws) > 0 {
		msg := ""
		for i, w := range ws {
			if i > 0 {
				msg += "\n"
			}
			msg += w.String()
		}
		return fmt.Errorf("%s\n(%s, errors with -strict)", msg, count(len(ws), "warning"))
	}
	for _, w := range ws {
		fmt.Fprintln(stderr, "warning: "+w.String())
	}
	note := ""
	if len(ws) > 0 {
		note = " (" + count(len(ws), "warning") + ")"
	}
	uses := ""
	if n := len(g.Instances); n > 0 {
		// The elements and links counted are the flattened ones.
		uses = ", " + count(n, "compound use")
	}
	fmt.Fprintf(stdout, "ok: %d elements, %d links, %d devices%s%s\n", len(g.Elements), len(g.Links), len(g.Devices), uses, note)
	return nil
}
