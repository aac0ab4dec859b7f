// Package tables is the configuration of a route table: the keys of a
// graph file's [tables.NAME] section, which any number of IPLookup
// elements read by name (table = "NAME"; the table named main by
// default), and the same keys given inline on one IPLookup, which make a
// table of its own. The graph loader (pipeline/graphfile) decodes and
// validates a Config per section and hands it to every IPLookup that
// names it; elements/ip builds one route.Table per Config, shared by all
// of them.
package tables
