// Package commentrefs holds the test that every repository file a Go
// comment names exists: a doc comment pointing at a file that was renamed
// or removed sends its reader nowhere.
package commentrefs
