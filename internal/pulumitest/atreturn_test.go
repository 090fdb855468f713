package pulumitest

import (
	"testing"
	"time"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// listing is a component for the check's own test: it lists what kept holds.
type listing struct {
	pulumi.ResourceState
	kept []pulumi.Resource
}

func (c *listing) Children() []pulumi.Resource { return append([]pulumi.Resource(nil), c.kept...) }

func configMap(ctx *pulumi.Context, parent pulumi.Resource, name string, data pulumi.StringInput) (*corev1.ConfigMap, error) {
	return corev1.NewConfigMap(ctx, name, &corev1.ConfigMapArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(name)},
		Data:     pulumi.StringMap{"k": data},
	}, pulumi.Parent(parent))
}

// The check passes a component that builds and lists its children before it returns, and
// fails, on every run, one that builds a child once another child's output is known (the
// ApplyT pattern) or that leaves a child out of its list.
func TestChildrenAtReturn(t *testing.T) {
	for _, tc := range []struct {
		name string
		// build registers the component's children and lists some of them in kept.
		build func(ctx *pulumi.Context, c *listing) error
		want  []string
	}{
		{"synchronous and listed", func(ctx *pulumi.Context, c *listing) error {
			a, err := configMap(ctx, c, "a", pulumi.String("1"))
			if err != nil {
				return err
			}
			b, err := configMap(ctx, c, "b", a.Metadata.Name().Elem()) // data flow is fine
			c.kept = append(c.kept, a, b)
			return err
		}, nil},
		{"late, inside an ApplyT", func(ctx *pulumi.Context, c *listing) error {
			a, err := configMap(ctx, c, "a", pulumi.String("1"))
			if err != nil {
				return err
			}
			c.kept = append(c.kept, a)
			a.Metadata.Name().Elem().ApplyT(func(n string) (string, error) {
				_, err := configMap(ctx, c, "late", pulumi.String(n))
				return n, err
			})
			return nil
		}, []string{
			"kubernetes:core/v1:ConfigMap::late is constructed after the constructor returned",
			"kubernetes:core/v1:ConfigMap::late is not in Children()",
		}},
		{"unlisted", func(ctx *pulumi.Context, c *listing) error {
			a, err := configMap(ctx, c, "a", pulumi.String("1"))
			if err != nil {
				return err
			}
			c.kept = append(c.kept, a)
			_, err = configMap(ctx, c, "forgotten", pulumi.String("2"))
			return err
		}, []string{"kubernetes:core/v1:ConfigMap::forgotten is not in Children()"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Several runs: a check that passes a late child now and then is no check.
			for range 5 {
				m := &Mocks{}
				got, err := m.childrenAtReturn("tfrs:test:Listing", func(ctx *pulumi.Context) (ChildLister, error) {
					c := &listing{}
					if err := ctx.RegisterComponentResource("tfrs:test:Listing", "c", c); err != nil {
						return nil, err
					}
					if err := tc.build(ctx, c); err != nil {
						return nil, err
					}
					// As every component ends: this waits for the component's own URN.
					return c, ctx.RegisterResourceOutputs(c, pulumi.Map{})
				})
				if err != nil {
					t.Fatal(err)
				}
				Eq(t, "problems", got, tc.want)
			}
		})
	}
}

// A constructor that waits for a registration to be answered (it would serialise the whole
// program) holds the gate closed: the check says so instead of hanging.
func TestChildrenAtReturnRefusesAWaitingConstructor(t *testing.T) {
	defer func(d time.Duration) { gateWait = d }(gateWait)
	gateWait = 200 * time.Millisecond
	got, err := (&Mocks{}).childrenAtReturn("tfrs:test:Listing", func(ctx *pulumi.Context) (ChildLister, error) {
		c := &listing{}
		if err := ctx.RegisterComponentResource("tfrs:test:Listing", "c", c); err != nil {
			return nil, err
		}
		a, err := configMap(ctx, c, "a", pulumi.String("1"))
		if err != nil {
			return nil, err
		}
		c.kept = append(c.kept, a)
		Collect[pulumi.URN](a.URN())() // waits for a's registration
		return c, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	Eq(t, "problems", got, []string{"the constructor waited for a registration to be answered"})
}
