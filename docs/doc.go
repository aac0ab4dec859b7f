// Package docs holds Junction's user documentation (the Markdown files of
// this directory) and the test that keeps its element and driver
// catalogues equal to the registries' manuals.
package docs
