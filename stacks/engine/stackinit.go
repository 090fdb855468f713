package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// `stack init` in-process. A new stack cost a CLI process (0.4–0.9 s: process start plus its
// own PBKDF2 key derivation) before its first up could start. What `pulumi stack init` does on
// a DIY backend (pkg/backend/diy CreateStack, v3.276.0) is a few object writes, so the engine
// does them itself, with the CLI's layout and its lock protocol:
//
//   - take the stack's backend lock: list .pulumi/locks/organization/<project>/<stack>/, write
//     a lock file of its own, list again, and give up ("the stack is currently locked by …", as
//     the CLI words it) when another lock is there. A CLI or another engine creating the same
//     stack contends with it exactly as with `pulumi stack init`, so of two creators exactly one
//     makes the stack (initStack). An owner record for this process stands beside the lock, so
//     a lock left by a crash here is proven stale like a CLI's (lockowners.go);
//   - under the lock: no checkpoint may exist yet; write the checkpoint `stack init` leaves (a
//     deployment with only the manifest and the passphrase provider's salt state);
//   - write the stack file with that salt, and release the lock.
//
// The salt is one whose key the engine already holds (reusableSalt), else a new one made like
// the passphrase provider makes it. Only the passphrase provider on a file:// or s3:// backend
// the CLI has already used (its .pulumi/meta.yaml, which fixes the layout, exists) is created
// here; anything else is errNotInProcess and `stack init` runs.

// lockFile is what a DIY lock file holds (pkg/backend/diy lockContent).
type lockFile struct {
	PID       int       `json:"pid"`
	Username  string    `json:"username"`
	Hostname  string    `json:"hostname"`
	Timestamp time.Time `json:"timestamp"`
}

func stackLockDir(stack string) string {
	return path.Join(".pulumi", "locks", "organization", ProjectName, stack) + "/"
}

// createStack creates the missing stack in-process. created is false when the stack exists
// (someone made it first); a held lock is an error isLockConflict recognises.
func (e *Engine) createStack(ctx context.Context, name string, ws auto.Workspace) (created bool, err error) {
	if e.opts.passphrase == nil {
		return false, errNotInProcess
	}
	b, err := e.bucket(ctx)
	if err != nil {
		return false, errNotInProcess
	}
	if ok, err := b.Exists(ctx, path.Join(".pulumi", "meta.yaml")); err != nil || !ok {
		return false, errNotInProcess
	}
	salt := e.reusableSalt()
	if salt == "" {
		if salt, err = e.newSalt(); err != nil {
			return false, err
		}
	}
	release := e.recordOwner(os.Getpid())
	defer release()
	unlock, err := e.lockStack(ctx, b, name)
	if err != nil {
		return false, err
	}
	defer unlock()
	if exists, err := e.stackExists(ctx, name); err != nil || exists {
		return false, err
	}
	body, err := initialCheckpoint(name, e.cli.version.String(), salt)
	if err != nil {
		return false, err
	}
	if err := b.WriteAll(ctx, stackObject(name, ".json"), body, nil); err != nil {
		return false, fmt.Errorf("write the new stack's checkpoint: %w", err)
	}
	if err := ws.SaveStackSettings(ctx, name, &workspace.ProjectStack{EncryptionSalt: salt}); err != nil {
		return true, err
	}
	return true, nil
}

// lockStack takes the stack's DIY backend lock the way the CLI does and returns its release.
func (e *Engine) lockStack(ctx context.Context, b *blob.Bucket, stack string) (func(), error) {
	dir := stackLockDir(stack)
	if err := otherLocks(ctx, b, dir, ""); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	username := ""
	if u, err := user.Current(); err == nil {
		username = u.Username
	}
	body, err := json.Marshal(lockFile{PID: os.Getpid(), Username: username, Hostname: host, Timestamp: time.Now()})
	if err != nil {
		return nil, err
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	key := dir + hex.EncodeToString(id) + ".json"
	if err := b.WriteAll(ctx, key, body, nil); err != nil {
		return nil, fmt.Errorf("write the stack's lock: %w", err)
	}
	unlock := func() {
		// Released even when ctx is done: a lock left here would hold the stack until proven stale.
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Delete(c, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			e.opts.Logger.Warn("cannot release the stack's lock", "key", key, "err", e.red.redact(err.Error()))
		}
	}
	if err := otherLocks(ctx, b, dir, key); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// otherLocks fails when dir holds a lock other than mine, worded like the CLI's checkForLock.
// A file backend lists a directory by stat-ing each entry, and another writer's temporary file
// (fileblob writes <key>.<random>.tmp, then renames it) can vanish in between: that listing
// is taken again.
func otherLocks(ctx context.Context, b *blob.Bucket, dir, mine string) error {
	var others []string
	var err error
	for range 10 {
		if others, err = listLocks(ctx, b, dir, mine); gcerrors.Code(err) != gcerrors.NotFound {
			break
		}
	}
	if err != nil {
		return err
	}
	if len(others) > 0 {
		return fmt.Errorf("the stack is currently locked by %d lock(s): %s", len(others), strings.Join(others, ", "))
	}
	return nil
}

// listLocks lists the lock files in dir but mine (a writer's temporary file counts: it is a
// lock about to exist).
func listLocks(ctx context.Context, b *blob.Bucket, dir, mine string) ([]string, error) {
	it := b.List(&blob.ListOptions{Prefix: dir})
	var others []string
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return others, nil
		}
		if err != nil {
			return nil, err
		}
		if !obj.IsDir && obj.Key != mine && !strings.HasSuffix(obj.Key, ".attrs") {
			others = append(others, obj.Key)
		}
	}
}

// newSalt makes a passphrase salt state as the passphrase provider does
// (NewPassphraseSecretsManager: 8 random bytes, and "pulumi" encrypted to check the phrase),
// and keeps its crypter, so the key is derived once.
func (e *Engine) newSalt() (string, error) {
	raw := make([]byte, 8)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	c := config.NewSymmetricCrypterFromPassphrase(*e.opts.passphrase, raw)
	check, err := c.EncryptValue(context.Background(), "pulumi")
	if err != nil {
		return "", err
	}
	state := "v1:" + base64.StdEncoding.EncodeToString(raw) + ":" + check
	ent := e.crypt.entry(state)
	ent.once.Do(func() { ent.c = c })
	return state, nil
}

// initialCheckpoint is the checkpoint `pulumi stack init` leaves: no resources, the manifest
// of the CLI version (magic: its SHA-256), and the passphrase provider's state.
func initialCheckpoint(stack, cliVersion, salt string) ([]byte, error) {
	if !strings.HasPrefix(cliVersion, "v") {
		cliVersion = "v" + cliVersion
	}
	type secretsProvider struct {
		Type  string `json:"type"`
		State struct {
			Salt string `json:"salt"`
		} `json:"state"`
	}
	sp := secretsProvider{Type: "passphrase"}
	sp.State.Salt = salt
	cp := map[string]any{
		"version": 3,
		"checkpoint": map[string]any{
			"stack": "organization/" + ProjectName + "/" + stack,
			"latest": map[string]any{
				"manifest": map[string]any{
					"time":    time.Now().UTC().Format(time.RFC3339Nano),
					"magic":   fmt.Sprintf("%x", sha256.Sum256([]byte(cliVersion))),
					"version": cliVersion,
				},
				"secrets_providers": sp,
				"metadata":          map[string]any{},
			},
		},
	}
	return json.Marshal(cp)
}
