package stacks

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/tenant"
)

// shareCase is one generated owner: the Deployments it runs, the robot being run, what that
// robot asks, and the share; with the reference totals in plain integers (milli-CPU, bytes).
type shareCase struct {
	share        OwnerShare
	robot        string
	current, own []Workload
}

// genWorkloads are n Deployments spread over robots r-0..r-(robots-1), with 0–3 replicas and
// 1–2 containers, each with or without a CPU and a memory limit.
func genWorkloads(rng *rand.Rand, robots, n int) []Workload {
	var out []Workload
	for range n {
		w := Workload{Robot: fmt.Sprintf("chat-r-%d", rng.IntN(robots)), Replicas: int32(rng.IntN(4))}
		for range 1 + rng.IntN(2) {
			l := corev1.ResourceList{}
			if rng.IntN(3) > 0 {
				l[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(50*(1+rng.IntN(20))), resource.DecimalSI)
			}
			if rng.IntN(3) > 0 {
				l[corev1.ResourceMemory] = *resource.NewQuantity(int64(64<<20*(1+rng.IntN(16))), resource.BinarySI)
			}
			w.Limits = append(w.Limits, l)
		}
		out = append(out, w)
	}
	return out
}

func genShare(rng *rand.Rand) OwnerShare {
	s := OwnerShare{DefaultLimits: corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(100*(1+rng.IntN(5))), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(128<<20*(1+rng.IntN(4))), resource.BinarySI),
	}}
	if rng.IntN(2) == 0 {
		s.Robots = ptr.To(int32(1 + rng.IntN(5)))
	}
	if rng.IntN(2) == 0 {
		s.CPU = resource.NewMilliQuantity(int64(250*(1+rng.IntN(24))), resource.DecimalSI)
	}
	if rng.IntN(2) == 0 {
		s.Memory = resource.NewQuantity(int64(256<<20*(1+rng.IntN(24))), resource.BinarySI)
	}
	return s
}

// refTotals is the reference count, written independently of usage: robots, milli-CPU and
// bytes of ws, a missing limit counting with the default.
func refTotals(s OwnerShare, ws []Workload) (robots int, cpu, mem int64) {
	seen := map[string]bool{}
	dc, dm := s.DefaultLimits[corev1.ResourceCPU], s.DefaultLimits[corev1.ResourceMemory]
	for _, w := range ws {
		seen[w.Robot] = true
		for _, l := range w.Limits {
			c, ok := l[corev1.ResourceCPU]
			if !ok {
				c = dc
			}
			m, ok := l[corev1.ResourceMemory]
			if !ok {
				m = dm
			}
			cpu += int64(w.Replicas) * c.MilliValue()
			mem += int64(w.Replicas) * m.Value()
		}
	}
	return len(seen), cpu, mem
}

// within: the totals fit the share.
func within(s OwnerShare, robots int, cpu, mem int64) bool {
	return (s.Robots == nil || robots <= int(*s.Robots)) && (s.CPU == nil || cpu <= s.CPU.MilliValue()) &&
		(s.Memory == nil || mem <= s.Memory.Value())
}

// The owner share over generated owners. With the robot's Deployments replaced by what its
// spec asks:
//   - an owner within its share stays within it after every run the check admits (no run
//     takes an owner over its share);
//   - a run that leaves the owner within its share is never refused;
//   - an owner already over (the admin lowered the share) may still run a robot that does not
//     grow the over-shared amounts, and never one that adds a robot past the count.
func TestOwnerShareGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 4))
	const cases = 20000
	var admitted, refused, overBefore int
	for i := range cases {
		c := shareCase{share: genShare(rng), robot: fmt.Sprintf("chat-r-%d", rng.IntN(6))}
		c.current = genWorkloads(rng, 6, rng.IntN(8))
		c.own = genWorkloads(rng, 1, 2)
		for j := range c.own {
			c.own[j].Robot = c.robot
		}
		var rest []Workload
		for _, w := range c.current {
			if w.Robot != c.robot {
				rest = append(rest, w)
			}
		}
		after := append(append([]Workload(nil), rest...), c.own...)
		br, bc, bm := refTotals(c.share, c.current)
		ar, ac, am := refTotals(c.share, after)
		errs := c.share.ShareErrors("tenant.alice.alice", c.robot, c.current, c.own)
		wasWithin, isWithin := within(c.share, br, bc, bm), within(c.share, ar, ac, am)
		if !wasWithin {
			overBefore++
		}
		grows := (c.share.CPU != nil && ac > c.share.CPU.MilliValue() && ac > bc) ||
			(c.share.Memory != nil && am > c.share.Memory.Value() && am > bm) ||
			(c.share.Robots != nil && ar > int(*c.share.Robots) && ar > br)
		switch {
		case isWithin && len(errs) > 0:
			t.Fatalf("case %d: refused a run that fits: %v (after: %d robots, %dm cpu, %d bytes; share %+v)", i, errs, ar, ac, am, c.share)
		case wasWithin && !isWithin && len(errs) == 0:
			t.Fatalf("case %d: admitted a run past the share (after: %d robots, %dm cpu, %d bytes; share %+v)", i, ar, ac, am, c.share)
		case !wasWithin && len(errs) == 0 && grows:
			t.Fatalf("case %d: an owner over its share grew past it (before %d/%dm/%d, after %d/%dm/%d, share %+v)", i, br, bc, bm, ar, ac, am, c.share)
		case !wasWithin && len(errs) > 0 && !grows:
			t.Fatalf("case %d: an owner over its share was refused a run that grows nothing past it: %v (before %d/%dm/%d, after %d/%dm/%d, share %+v)", i, errs, br, bc, bm, ar, ac, am, c.share)
		}
		for _, e := range errs {
			if e.Field != "spec.tenantRef" || !strings.Contains(e.Detail, "spec.personal.ownerShare.") || !strings.Contains(e.Detail, "tenant.alice.alice") {
				t.Fatalf("case %d: refusal %q at %s: want spec.tenantRef naming the owner and the share", i, e.Detail, e.Field)
			}
		}
		if len(errs) > 0 {
			refused++
		} else {
			admitted++
		}
	}
	t.Logf("%d generated runs: %d admitted, %d refused, %d of owners already over their share", cases, admitted, refused, overBefore)
	if refused < cases/10 || admitted < cases/10 {
		t.Fatalf("the generator does not exercise both outcomes: %d admitted, %d refused", admitted, refused)
	}
}

// No share, no check; a server's Deployments are its API and robot worker, replicas default 1.
func TestOwnerShareBasics(t *testing.T) {
	var none *OwnerShare
	if errs := none.ShareErrors("o", "r", genWorkloads(rand.New(rand.NewPCG(1, 1)), 3, 10), nil); errs != nil {
		t.Fatalf("nil share refused: %v", errs)
	}
	spec := &v1alpha1.TFRServerSpec{RobotWorker: v1alpha1.WorkloadSpec{Replicas: ptr.To(int32(3))}}
	spec.APIWorker.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	ws := ServerWorkloads("chat-r-1", spec)
	if len(ws) != 2 || ws[0].Replicas != 1 || ws[1].Replicas != 3 || ws[0].Limits[0].Cpu().String() != "500m" || ws[0].Robot != "chat-r-1" {
		t.Fatalf("ServerWorkloads = %+v", ws)
	}
	// 1×500m + 3×default 200m = 1100m against 1 CPU.
	s := &OwnerShare{OwnerShare: v1alpha1.OwnerShare{CPU: ptr.To(resource.MustParse("1"))},
		DefaultLimits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}
	errs := s.ShareErrors("tenant.alice.alice", "chat-r-1", nil, ws)
	if len(errs) != 1 || !strings.Contains(errs[0].Detail, "1100m") || !strings.Contains(errs[0].Detail, "ownerShare.cpu") {
		t.Fatalf("errs = %v, want one at ownerShare.cpu naming 1100m", errs)
	}
}

// The shared stack exports the cluster's share with its class's default limits; a cluster
// without one exports "", and a tenant's outputs read it back.
func TestOwnerShareOutput(t *testing.T) {
	q := &tenant.Quota{Class: "small", Default: map[string]string{"cpu": "250m", "memory": "256Mi"}}
	out, err := ownerShareOutput(TenantCluster{}, q)
	if err != nil || out != "" {
		t.Fatalf("no personal spec: %q %v", out, err)
	}
	p, _ := json.Marshal(v1alpha1.PersonalSpec{OwnerShare: v1alpha1.OwnerShare{Robots: ptr.To(int32(3)), Memory: ptr.To(resource.MustParse("2Gi"))}})
	out, err = ownerShareOutput(TenantCluster{Personal: OptionalString(p)}, q)
	if err != nil {
		t.Fatal(err)
	}
	s, err := (&TenantOutputs{OwnerShare: out}).Share()
	if err != nil || s == nil {
		t.Fatalf("Share() = %v, %v", s, err)
	}
	if *s.Robots != 3 || s.Memory.String() != "2Gi" || s.CPU != nil || s.DefaultLimits.Cpu().String() != "250m" || s.DefaultLimits.Memory().String() != "256Mi" {
		t.Fatalf("share read back as %+v", s)
	}
	if s, err := (&TenantOutputs{}).Share(); s != nil || err != nil {
		t.Fatalf("no output: %v %v", s, err)
	}
}
