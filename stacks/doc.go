// Package stacks holds the Pulumi programs of the three stack levels: Cluster (TFRCluster),
// Tenant (TFRTenant) and Server (TFRServer). Each is a pulumi.RunFunc over a typed input; the
// engine (stacks/engine) and the doors (operator, HTTP API, CLI) run them, and this package
// never imports the engine: stack names come from api/stackname, credentials and output
// values from stacks/program.
//
// Every level has the same shape, and the shared parts live once:
//
//   - skeleton.go: the skeleton. runProgram is the one RunFunc wrapper (readiness transforms,
//     the level's body, exports); prepare is every body's prelude (defaulted, validated copy
//     of the CR, graph reset). A body then plans (every argument computed from the spec before
//     anything is registered, so a bad override fails first), registers its steps and returns
//     its outputs.
//   - graph.go: the steps and their graph. A level lists its components as an ordered []step
//     (id, type, why skipped, create); graphBuilder registers them with DependsOn from the
//     level's dependsOn table, applies the removal rule and records the Graph that
//     ClusterGraph, TenantGraph and ServerGraph return (run under graphMocks). graph_format.go
//     renders a Graph.
//   - outputs.go: the outputs, one typed struct per level (ClusterOutputs, TenantOutputs,
//     ServerOutputs, and TenantCluster, a tenant's view of the cluster's), each with one
//     table binding keys to fields that both exports and parses them, and SecretString.
//   - awaits.go: the program-wide readiness transforms; sources.go: the pinned charts and
//     manifests and how a spec overrides them.
//
// The levels themselves: cluster.go; tenant.go with its steps in tenant_steps.go and the
// personal tenants' shared stacks (naming, ownership, members) in personal.go; server.go.
// Each holds the level's node ids, dependsOn table, input, Graph function, body and plan.
package stacks
