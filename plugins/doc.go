// Package plugins is the home of Junction's extension mechanisms: host runs
// out-of-process element plugins (hashicorp/go-plugin, batches through
// shared memory), sdk is what a plugin author imports, and examples holds
// worked examples of both plugins and in-process custom elements. See
// README.md in this directory for the recipes.
package plugins
