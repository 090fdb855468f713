package enginetest

import (
	"maps"
	"regexp"
	"strings"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// Secret is the value of the secret outputs this package makes; a test asserts it never shows.
const Secret = "s3cret-output-value"

// Tags returns a stack's tags as the door by made it: more, and by as engine.TagManagedBy.
func Tags(by engine.ManagedBy, more map[string]string) map[string]string {
	tags := map[string]string{engine.TagManagedBy: string(by)}
	maps.Copy(tags, more)
	return tags
}

// DefaultOutputs are well-typed outputs for a stack of stack's level, the ones its children
// read: ClusterOutputs for a cluster stack, TenantOutputs for a tenant stack, none for a server
// stack.
func DefaultOutputs(stack string) program.Outputs {
	switch {
	case strings.HasPrefix(stack, stackname.LevelCluster+"."):
		return ClusterOutputs()
	case strings.HasPrefix(stack, stackname.LevelTenant+"."):
		return TenantOutputs(program.Outputs{})
	default:
		return program.Outputs{}
	}
}

// ClusterOutputs are a cluster stack's outputs that its tenants read (no image registry, no
// pull secret, the RabbitMQ operator ready).
func ClusterOutputs() program.Outputs {
	return program.Outputs{
		stacks.ClusterOutputPullSecretName:        program.NewOutput("", false),
		stacks.ClusterOutputDockerConfigJSON:      program.NewOutput("", true),
		stacks.ClusterOutputImageRegistry:         program.NewOutput("", false),
		stacks.ClusterOutputRabbitMQOperatorReady: program.NewOutput(true, false),
	}
}

// reOutputErr matches stacks.TenantOutputsFromStack's complaints about one output.
var reOutputErr = regexp.MustCompile(`output "([^"]+)" (is missing|is not a secret|.*want an integer|.*want a bool|.*want a string)`)

// TenantOutputs completes outs (in place, and returns it) until stacks.TenantOutputsFromStack
// accepts them, whatever fields the tenant outputs gain later: secrets are Secret, integers 1,
// bools true, strings "v-" and the key.
func TenantOutputs(outs program.Outputs) program.Outputs {
	for range 500 {
		_, err := stacks.TenantOutputsFromStack(outs)
		if err == nil {
			return outs
		}
		m := reOutputErr.FindStringSubmatch(err.Error())
		if m == nil {
			panic(err)
		}
		switch k := m[1]; {
		case m[2] == "is not a secret":
			outs[k] = program.NewOutput(Secret, true)
		case strings.HasSuffix(m[2], "integer"):
			outs[k] = program.NewOutput(1.0, false)
		case strings.HasSuffix(m[2], "bool"):
			outs[k] = program.NewOutput(true, false)
		default:
			outs[k] = program.NewOutput("v-"+k, false)
		}
	}
	panic("tenant outputs never complete")
}
