package graphfile

import (
	"fmt"
	"strings"
)

// DOT returns the graph in Graphviz's DOT language: one box per element,
// labelled "name :: Type" (just "Type" for an anonymous one), one edge per
// link labelled with its ports ("[1] -> [0]"), and each device as a note
// joined by a dashed edge to the elements that name it (into sources, out
// of the others).
//
//	forwarder graph -config router.toml | dot -Tsvg > router.svg
func (g *Graph) DOT() string {
	var b strings.Builder
	name := g.File
	if name == "" {
		name = "graph"
	}
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(name))
	b.WriteString("\trankdir=LR;\n")
	b.WriteString("\tnode [shape=box, fontname=\"Helvetica\"];\n")
	b.WriteString("\tedge [fontname=\"Helvetica\", fontsize=10];\n")
	for _, d := range g.Devices {
		label := d.Name
		if d.Driver != nil {
			label += " (" + d.Driver.Name + ")"
		}
		fmt.Fprintf(&b, "\t%s [shape=note, style=dashed, label=%s];\n", dotQuote("device "+d.Name), dotQuote(label))
	}
	g.DOTNodes(&b, func(e *Element) string {
		label := e.Name
		if e.Type != nil {
			if e.Anonymous {
				label = e.Type.Name
			} else {
				label = e.LocalName() + " :: " + e.Type.Name
			}
		}
		return fmt.Sprintf("%s [label=%s];", dotQuote(e.Name), dotQuote(label))
	})
	for _, e := range g.Elements {
		for _, ref := range deviceRefs(e) {
			if g.Device(ref.dev) == nil {
				continue
			}
			dev := dotQuote("device " + ref.dev)
			if e.Type.Source {
				fmt.Fprintf(&b, "\t%s -> %s [style=dashed, arrowhead=none];\n", dev, dotQuote(e.Name))
			} else {
				fmt.Fprintf(&b, "\t%s -> %s [style=dashed, arrowhead=none];\n", dotQuote(e.Name), dev)
			}
		}
	}
	for _, lk := range g.Links {
		fmt.Fprintf(&b, "\t%s -> %s [label=%s];\n", dotQuote(lk.From), dotQuote(lk.To),
			dotQuote(fmt.Sprintf("[%d] -> [%d]", lk.FromPort, lk.ToPort)))
	}
	b.WriteString("}\n")
	return b.String()
}

// DOTNodes writes the statement node returns for every element, one a
// line, the elements of each compound instance inside a DOT cluster
// labelled "NAME :: COMPOUND" (NAME inside the enclosing instance), nested
// as the instances are: the graph
// reads as it was written, while its boxes are the flattened elements
// that run and count.
func (g *Graph) DOTNodes(b *strings.Builder, node func(e *Element) string) {
	byInst := map[string][]*Element{}
	for _, e := range g.Elements {
		byInst[e.Instance] = append(byInst[e.Instance], e)
	}
	children := map[string][]*Instance{}
	for _, in := range g.Instances {
		children[in.Parent] = append(children[in.Parent], in)
	}
	var write func(inst, indent string)
	write = func(inst, indent string) {
		for _, e := range byInst[inst] {
			fmt.Fprintf(b, "%s%s\n", indent, node(e))
		}
		for _, c := range children[inst] {
			fmt.Fprintf(b, "%ssubgraph %s {\n", indent, dotQuote("cluster "+c.Name))
			fmt.Fprintf(b, "%s\tlabel=%s;\n%s\tstyle=\"rounded,dashed\";\n", indent, dotQuote(strings.TrimPrefix(c.Name, c.Parent+"/")+" :: "+c.Compound), indent)
			write(c.Name, indent+"\t")
			fmt.Fprintf(b, "%s}\n", indent)
		}
	}
	write("", "\t")
}

// LocalName is the element's name inside its compound instance ("cls" for
// "lan/cls"), its name when it lies in none.
func (e *Element) LocalName() string {
	if e.Instance == "" {
		return e.Name
	}
	return strings.TrimPrefix(e.Name, e.Instance+"/")
}

// DOTQuote quotes s as a DOT identifier or label, for drawings of a graph
// made outside this package (livedot.DOT).
func DOTQuote(s string) string { return dotQuote(s) }

func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
