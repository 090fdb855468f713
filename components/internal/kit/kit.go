// Package kit is what the component packages (cluster, tenant, server) share: the one Helm
// chart constructor and the transforms it applies (image mirror, registry pull Secret), the
// pull-Secret list of pod specs and the recommended labels. The custom resources every
// package creates are built by components/internal/crs, their typed builders.
//
// The component packages import the kit but never each other, so a helper has one home and
// one copy. They may also import components/routing, which is no component package: it is
// the one definition of how the gateway finds a robot's API Service, which the cluster's Lua
// filter and the server's Service names must agree on. The kit registers no component of its own: every
// resource it creates is a child of the component that asks for it, under the name that
// component gives, so moving a helper here changes no URN.
//
// The kit is internal to components/, so programs (stacks/) cannot name it. Where a kit type
// is part of a component's arguments, the component package re-exports it as an alias
// (cluster.ChartRef, cluster.ImageRewriter, tenant.ChartRef, tenant.Images): an alias, not a
// new type, so one resolved ChartRef serves either package, and the component packages stay
// the public surface.
//
// components/internal/children, which records a component's children for DependsOn, stays a
// package of its own: components embed its Set, and the embedded name says what it is.
package kit

// Recommended Kubernetes labels of the objects the tenant and server components create. The
// server package exports them again as its own public names (server.LabelInstance …), which
// programs match on.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelPartOf    = "app.kubernetes.io/part-of"
	// PartOf is the LabelPartOf value of every object TFRS labels.
	PartOf = "tfrs"
)

// RobotServiceAccountSuffix ends the name of every robot's own ServiceAccount ("{robot}-robot"),
// so a policy can name every robot's mesh identity ("*-robot") and no other.
const RobotServiceAccountSuffix = "-robot"

// RobotAppName is the LabelName of every robot pod (its workers and Jobs): the tenant
// namespace's policies tell robots from the namespace's other pods by it.
const RobotAppName = "tfrobot-server"
