// Package plugins will hold out-of-process element plugins (host, SDK and
// examples, over hashicorp/go-plugin). It is empty until that work lands;
// in-process custom elements need nothing from here: see elements/doc.go.
package plugins
