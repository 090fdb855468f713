package main

import "testing"

func TestMutating(t *testing.T) {
	for _, c := range []struct {
		args []string
		cmd  string
		ok   bool
	}{
		{[]string{"--non-interactive", "up", "--stack", "tenant.a", "--yes"}, "up", true},
		{[]string{"--non-interactive", "--stack", "refresh", "preview"}, "", false}, // a stack named refresh
		{[]string{"stack", "import", "--stack", "x", "--file", "f"}, "stack-import", true},
		{[]string{"stack", "export", "--stack", "x"}, "", false},
		{[]string{"cancel", "--stack", "x", "--yes"}, "cancel", true},
		{[]string{"version"}, "", false},
	} {
		cmd, ok := mutating(c.args)
		if cmd != c.cmd || ok != c.ok {
			t.Errorf("mutating(%q) = %q, %v; want %q, %v", c.args, cmd, ok, c.cmd, c.ok)
		}
	}
	if s := flagValue([]string{"up", "--stack=tenant.b"}, "--stack", "-s"); s != "tenant.b" {
		t.Errorf("flagValue: %q", s)
	}
}
