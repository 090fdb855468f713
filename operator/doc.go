// Package operator reconciles TFRCluster, TFRTenant and TFRServer custom resources through
// their Pulumi stacks (stacks/runner over stacks/engine).
//
// One core (core.go) serves the three kinds over v1alpha1.Object, through which each kind says
// what it is (stacks, parent, secrets to keep out of messages, validation); the program each
// runs is the runner's (stacks/kinds). A kind here (cluster.go, tenant.go, server.go) only adds
// what a controller has and the other doors do not: which object it reconciles, which parent
// custom resources it consumes and waits for, which children hold its deletion, what it
// watches, and its own status fields. Reconcile is short: get, finalizer, deferred status
// patch, then the delete path or the apply path. Whether anything runs is a pure function of
// the object's status, its parents' custom resources and a clock (decide.go): an up only for a
// new generation, a failed attempt's retry (capped exponential backoff), a new value of the
// tfrs.io/reconcile-request annotation, a parent whose outputs changed, or drift with
// autoRemediate; a drift check at spec.driftDetection.interval; nothing — and no engine call —
// otherwise (counted in tfrs_operator_resync_skips_total).
//
// Engine operations never hold a worker: they run as jobs in an in-memory table keyed by stack
// (jobs.go), and a job's end wakes its object through a channel source so the next reconcile
// collects the result into status. A process that stops mid-run leaves observedGeneration
// where it was, so the next leader runs the up again; the engine recovers the interrupted run.
package operator
