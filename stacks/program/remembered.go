package program

import "github.com/pulumi/pulumi/sdk/v3/go/pulumi"

// Remembered reports whether the stack's state held the credential name before this run (the
// engine binds what the state holds with WithCredentials). A program uses it to tell a stack
// that ran before a change from a new one, for names that must not move under an existing
// stack's data. It is false under mocks unless the test binds the credential.
func Remembered(ctx *pulumi.Context, name string) bool {
	v, ok := bindings.Load(ctx)
	if !ok {
		return false
	}
	b := v.(*binding)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.prev[name] != ""
}
