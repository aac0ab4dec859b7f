package pipeline_test

import (
	"fmt"

	"github.com/junction-dataplane/junction/pipeline"
)

func ExampleParse() {
	_, err := pipeline.Parse("router.toml", []byte(`[elements.rt]
type = "NoSuchType"

[graph]
links = ["rt -> Xyzzy"]
`))
	fmt.Println(err)
	// Output:
	// router.toml:2: element "rt": key "type": unknown element type "NoSuchType"
	// router.toml:5: unknown element or type "Xyzzy"
}
