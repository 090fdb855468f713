package program

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

// ConfigRenderDir is the Kubernetes provider's config key that makes it write YAML manifests
// into a directory instead of applying them (`tfrs render`).
const ConfigRenderDir = "kubernetes:renderYamlToDirectory"

// Rendering reports whether this run renders manifests and so has no cluster to read from: a
// program must then not read existing objects (a read fails without a cluster).
func Rendering(ctx *pulumi.Context) bool { return config.Get(ctx, ConfigRenderDir) != "" }

// RenderPlaceholder stands, in rendered manifests, for a value the program would read from a
// cluster object at apply time (what names the object, never its content).
func RenderPlaceholder(what string) string { return "RENDERED-WITHOUT-CLUSTER(" + what + ")" }
