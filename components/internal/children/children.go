// Package children records a component's direct children for DependsOn.
//
// Pulumi's Go SDK attaches a child to its parent asynchronously (in the child's registration
// goroutine, after any transform is registered), so a DependsOn on a component that was
// created a moment earlier can miss children not attached yet and silently order nothing. A
// dependant that also names the children (Children) waits for all of them, every time.
// Components embed a Set and Keep what they register.
package children

import "github.com/pulumi/pulumi/sdk/v3/go/pulumi"

// Set is a component's direct children.
type Set struct{ list []pulumi.Resource }

// Keep adds children; nils (components that are switched off) are skipped.
func (c *Set) Keep(rs ...pulumi.Resource) {
	for _, r := range rs {
		if r != nil {
			c.list = append(c.list, r)
		}
	}
}

// Children are the component's direct children, for DependsOn.
func (c *Set) Children() []pulumi.Resource { return append([]pulumi.Resource(nil), c.list...) }
