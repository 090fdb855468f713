//go:build tfrs_second_build

package main

import "github.com/tfrs-io/tfrs-operator/api/v1alpha1"

// A second build of tfrs for the fleet tests (test/e2e/fleet_builds_test.go): the same code
// with one tenant-level default changed, as an upgrade would change it. Never in a release.
func init() { v1alpha1.DefaultRedisSize = "2Gi" }
