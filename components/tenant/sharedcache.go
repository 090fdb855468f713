package tenant

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/components/internal/children"
)

// SharedCacheClaim is the shared image-cache PVC every robot of the tenant mounts.
const SharedCacheClaim = "shared-cache"

// SharedCacheArgs configure the shared-cache component.
type SharedCacheArgs struct {
	Namespace pulumi.StringInput
	// Size, StorageClass and AccessMode (ReadWriteMany by default: robots on several nodes
	// mount it at once) of the claim.
	Size, StorageClass, AccessMode string
	// CacheDir is where robots mount it; passed through to the outputs.
	CacheDir string
	// Retain keeps the claim (and its volume) on destroy.
	Retain bool
}

// SharedCache is the tenant's shared image-cache volume claim.
type SharedCache struct {
	pulumi.ResourceState
	children.Set

	ClaimName pulumi.StringOutput `pulumi:"claimName"`
	CacheDir  pulumi.StringOutput `pulumi:"cacheDir"`
}

// NewSharedCache creates the shared-cache component.
func NewSharedCache(ctx *pulumi.Context, name string, args *SharedCacheArgs, opts ...pulumi.ResourceOption) (*SharedCache, error) {
	if args == nil || args.Namespace == nil || args.CacheDir == "" {
		return nil, fmt.Errorf("shared-cache: namespace and cache dir are required")
	}
	c := &SharedCache{}
	if err := ctx.RegisterComponentResource(SharedCacheType, name, c, opts...); err != nil {
		return nil, err
	}
	pvc, err := newPVC(ctx, c, name+"-claim", SharedCacheClaim, args.Namespace, args.Size, args.StorageClass, args.AccessMode, args.Retain)
	if err != nil {
		return nil, err
	}
	c.Keep(pvc)
	c.ClaimName = pvc.Metadata.Name().Elem()
	c.CacheDir = pulumi.String(args.CacheDir).ToStringOutput()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"claimName": c.ClaimName, "cacheDir": c.CacheDir})
}
