package stacks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// Program revisions. Every door applies stacks with the programs compiled into its tfrs
// build, so "which tfrs applied this stack" is what an upgrade changes besides the spec.
// A successful up records its build's revision on the stack, as tags (engine.Request's
// AppliedTags, written by whichever door ran it), and the operator copies it into
// status.revision; `tfrs status`, the HTTP resource views and the operator's
// tfrs_operator_stacks_by_revision metric show it.

// Stack tags of the revision that last applied a stack.
const (
	TagRevision        = "tfrs.io/revision"
	TagRevisionVersion = "tfrs.io/revision-version"
	TagRevisionCommit  = "tfrs.io/revision-commit"
)

// ProgramDigest is a digest of what the programs use besides the spec and their code: the
// pinned sources table (charts, manifests, versions, images of every component).
func ProgramDigest() string {
	type source struct {
		Component, Kind, Repo, Version string
		Artifacts                      []Artifact
		Images                         []string
	}
	var all []source
	for _, s := range append(PinnedClusterSources(), PinnedTenantSources()...) {
		all = append(all, source{s.Component, string(s.Kind), s.Repo, s.Version, s.Artifacts, s.Images})
	}
	b, err := json.Marshal(all)
	if err != nil {
		panic("stacks: the pinned sources table does not encode: " + err.Error()) // plain data: unreachable
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// NewRevision is the revision of a build: its version and commit, and code, which names the
// program code when the commit cannot (a digest of the binary for a modified or unknown
// tree; "" for a clean commit, which names it).
func NewRevision(version, commit, code string) v1alpha1.Revision {
	h := sha256.New()
	for _, part := range []string{version, commit, code, ProgramDigest()} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return v1alpha1.Revision{ID: hex.EncodeToString(h.Sum(nil))[:12], Version: version, Commit: commit}
}

// CleanCommit reports whether commit names a build's code by itself: a VCS revision of an
// unmodified tree.
func CleanCommit(commit string) bool {
	return commit != "" && !strings.HasSuffix(commit, "-dirty")
}

// RevisionTags are the stack tags recording r (nil for none).
func RevisionTags(r *v1alpha1.Revision) map[string]string {
	if r == nil || r.ID == "" {
		return nil
	}
	return map[string]string{TagRevision: r.ID, TagRevisionVersion: r.Version, TagRevisionCommit: r.Commit}
}

// RevisionFromTags reads the revision a stack's tags record (nil for a stack never applied
// by a build that records one).
func RevisionFromTags(tags map[string]string) *v1alpha1.Revision {
	if tags[TagRevision] == "" {
		return nil
	}
	return &v1alpha1.Revision{ID: tags[TagRevision], Version: tags[TagRevisionVersion], Commit: tags[TagRevisionCommit]}
}
