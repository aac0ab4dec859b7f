// Package all registers every standard element family; import it for its
// side effects. A custom build imports it (or the families it wants) plus
// its own element packages.
package all
