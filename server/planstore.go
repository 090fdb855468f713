package server

import (
	"sync"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"
)

// Pending plans (POST …/{name}/apply) are package approval's records (approval.Store): the
// plans the engine keeps beside each stack and what the API needs to apply them later, on
// any replica. They live beside the specs: in the backend spec store's bucket, so every
// replica that shares the specs shares the plans, and in memory with the memory spec store.
// Any other SpecStore gets an in-memory bucket of the server's own.

// memoryPlans is the memory spec store's bucket of pending plans, opened at first use.
type memoryPlans struct {
	once sync.Once
	bkt  *blob.Bucket
}

func (m *memoryPlans) bucket() *blob.Bucket {
	m.once.Do(func() { m.bkt = memblob.OpenBucket(nil) })
	return m.bkt
}

// plansBucket is where the server keeps its pending plans.
func plansBucket(specs SpecStore) *blob.Bucket {
	switch s := specs.(type) {
	case *BackendSpecStore:
		return s.b
	case *MemorySpecStore:
		return s.pending.bucket()
	}
	return memblob.OpenBucket(nil)
}
