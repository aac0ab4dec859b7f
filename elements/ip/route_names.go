package ip

import (
	"io"

	"github.com/junction-dataplane/junction/elements/ip/route"
)

// The route table lives in elements/ip/route; these names keep callers of
// its former home (tools, benchmarks) unchanged.
type (
	Route      = route.Route
	Hop        = route.Hop
	Table      = route.Table
	Limits     = route.Limits
	GenOptions = route.GenOptions
)

// ParseRoute is route.ParseRoute.
func ParseRoute(s string) (Route, error) { return route.ParseRoute(s) }

// NewTable is route.NewTable.
func NewTable(routes []Route) (*Table, error) { return route.NewTable(routes) }

// GenerateRoutes is route.GenerateRoutes.
func GenerateRoutes(o GenOptions) []Route { return route.GenerateRoutes(o) }

// MaxRoutesFileSize bounds a routes_file (route.MaxRoutesFileSize).
const MaxRoutesFileSize = route.MaxRoutesFileSize

// WriteRoutes is route.WriteRoutes.
func WriteRoutes(w io.Writer, routes []Route) error { return route.WriteRoutes(w, routes) }

// ReadRoutesFile is route.ReadRoutesFile.
func ReadRoutesFile(file string) ([]Route, error) { return route.ReadRoutesFile(file) }
