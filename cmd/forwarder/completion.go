package main

import (
	"fmt"
	"io"
	"strings"
)

// forwarder completion bash|zsh|fish: a completion script for the shell,
// written from the command table (cmdtable.go): the subcommands, each
// one's flags (files for a FILE or PATH value, the fixed values of a
// "-format a|b"), show's and route's words, and element types, drivers
// or commands where a command takes one.

func completionCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("completion", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("want one shell: bash, zsh or fish")
	}
	cmds := cliTable()
	switch fs.Arg(0) {
	case "bash":
		writeBashCompletion(stdout, cmds)
	case "zsh":
		writeZshCompletion(stdout, cmds)
	case "fish":
		writeFishCompletion(stdout, cmds)
	default:
		msg := fmt.Sprintf("shell %q: want bash, zsh or fish", fs.Arg(0))
		if s := nearest(fs.Arg(0), []string{"bash", "zsh", "fish"}); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return usageErrorf("%s", msg)
	}
	return nil
}

func commandList(cmds []cliCommand) string {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.name
	}
	return strings.Join(names, " ")
}

// writeBashCompletion: a function for `complete -F`. The word before the
// cursor picks a flag's values; otherwise a dash offers the command's
// flags and anything else its words and operands.
func writeBashCompletion(w io.Writer, cmds []cliCommand) {
	fmt.Fprintf(w, `# bash completion for forwarder (Junction); written by "forwarder completion bash".
# Install: /usr/share/bash-completion/completions/forwarder, or
#   source <(forwarder completion bash)

_forwarder() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	if (( COMP_CWORD == 1 )); then
		COMPREPLY=($(compgen -W %q -- "$cur"))
		return
	fi
	local flags= words= values=
	case ${COMP_WORDS[1]} in
`, commandList(cmds))
	for _, c := range cmds {
		fmt.Fprintf(w, "\t%s)\n", c.name)
		var names []string
		var files, other []string
		for _, f := range c.flags {
			names = append(names, "-"+f.name)
			switch {
			case f.arg == "":
			case f.choices != nil:
				fmt.Fprintf(w, "\t\t[[ $prev == -%s ]] && values=%q\n", f.name, strings.Join(f.choices, " "))
			case f.takesFile():
				files = append(files, "-"+f.name)
			default:
				other = append(other, "-"+f.name)
			}
		}
		if len(files) > 0 {
			fmt.Fprintf(w, "\t\tcase $prev in %s) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); return ;; esac\n", strings.Join(files, "|"))
		}
		if len(other) > 0 {
			fmt.Fprintf(w, "\t\tcase $prev in %s) return ;; esac\n", strings.Join(other, "|"))
		}
		fmt.Fprintf(w, "\t\tflags=%q\n", strings.Join(names, " "))
		if vals := c.arguments(); len(vals) > 0 {
			fmt.Fprintf(w, "\t\twords=%q\n", strings.Join(vals, " "))
		}
		fmt.Fprintf(w, "\t\t;;\n")
	}
	fmt.Fprint(w, `	esac
	if [[ -n $values ]]; then
		COMPREPLY=($(compgen -W "$values" -- "$cur"))
	elif [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$flags" -- "$cur"))
	elif [[ -n $words ]]; then
		COMPREPLY=($(compgen -W "$words" -- "$cur"))
	else
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -F _forwarder forwarder
`)
}

// zshQuote makes s a single-quoted zsh word's content, safe inside an
// _arguments spec ([...] description, :-separated fields).
func zshQuote(s string) string {
	return strings.NewReplacer(`'`, `'\''`, `[`, `\[`, `]`, `\]`, `:`, `\:`).Replace(s)
}

func writeZshCompletion(w io.Writer, cmds []cliCommand) {
	fmt.Fprint(w, `#compdef forwarder
# zsh completion for forwarder (Junction); written by "forwarder completion zsh".
# Install as _forwarder in a directory of $fpath (Debian:
# /usr/share/zsh/vendor-completions).

_forwarder() {
	local -a commands
	commands=(
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "\t\t'%s:%s'\n", c.name, zshQuote(c.summary))
	}
	fmt.Fprint(w, `	)
	if (( CURRENT == 2 )); then
		_describe -t commands 'forwarder command' commands
		return
	fi
	local cmd=$words[2]
	shift words
	(( CURRENT-- ))
	case $cmd in
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "\t%s)\n\t\t_arguments", c.name)
		for _, f := range c.flags {
			spec := fmt.Sprintf("-%s[%s]", f.name, zshQuote(firstLine(f.usage)))
			switch {
			case f.arg == "":
			case f.choices != nil:
				spec += fmt.Sprintf(":%s:(%s)", zshQuote(f.arg), strings.Join(f.choices, " "))
			case f.takesFile():
				spec += fmt.Sprintf(":%s:_files", zshQuote(f.arg))
			default:
				spec += fmt.Sprintf(":%s: ", zshQuote(f.arg))
			}
			fmt.Fprintf(w, " \\\n\t\t\t'%s'", spec)
		}
		if vals := c.arguments(); len(vals) > 0 {
			fmt.Fprintf(w, " \\\n\t\t\t'*:argument:(%s)'", strings.Join(vals, " "))
		} else {
			fmt.Fprintf(w, " \\\n\t\t\t'*:argument:_files'")
		}
		fmt.Fprint(w, "\n\t\t;;\n")
	}
	fmt.Fprint(w, `	esac
}

_forwarder "$@"
`)
}

// fishQuote makes s a single-quoted fish word.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func writeFishCompletion(w io.Writer, cmds []cliCommand) {
	fmt.Fprintf(w, `# fish completion for forwarder (Junction); written by "forwarder completion fish".
# Install: /usr/share/fish/vendor_completions.d/forwarder.fish

complete -c forwarder -f
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "complete -c forwarder -n '__fish_use_subcommand' -a %s -d %s\n", c.name, fishQuote(c.summary))
	}
	for _, c := range cmds {
		cond := fmt.Sprintf("'__fish_seen_subcommand_from %s'", c.name)
		for _, f := range c.flags {
			opt := ""
			switch {
			case f.arg == "":
			case f.choices != nil:
				opt = " -x -a " + fishQuote(strings.Join(f.choices, " "))
			case f.takesFile():
				opt = " -r -F"
			default:
				opt = " -x"
			}
			fmt.Fprintf(w, "complete -c forwarder -n %s -o %s%s -d %s\n", cond, f.name, opt, fishQuote(firstLine(f.usage)))
		}
		if vals := c.arguments(); len(vals) > 0 {
			fmt.Fprintf(w, "complete -c forwarder -n %s -a %s\n", cond, fishQuote(strings.Join(vals, " ")))
		}
	}
}

// firstLine is a flag's help up to its first parenthesis or sentence end:
// what fits a completion menu.
func firstLine(s string) string {
	if i := strings.IndexAny(s, "(;"); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), ":"))
}
