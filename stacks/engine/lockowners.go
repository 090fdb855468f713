package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Lock owners. A Pulumi DIY lock records only user, hostname, pid and time. That is not enough
// to prove its owner gone: containers that share a hostname do not share pids, a pid is reused,
// and a wall-clock step makes a live process look younger than its lock. So for every CLI
// process that can take the lock, the engine writes an owner record into the backend beside
// the state (tfrs/lockowners/<host>_<pid>_…): the kernel's boot id, the pid namespace, the
// process start in clock ticks since boot (immune to clock steps), and, in a pod, the Pod's
// namespace, name and UID. A lock is broken only when every record that can stand for its
// host and pid is provably gone (judgeLock); a lock with no record is reported, never guessed.
//
// A record is removed when its CLI exits by itself (the CLI then released its lock). It is kept
// when the CLI died by a signal, or when the engine died with it, because that is exactly when
// a lock is left behind; breaking the lock removes the record too.

// ownerRecordPrefix is the key prefix of owner records in the backend.
const ownerRecordPrefix = "tfrs/lockowners/"

// PodRef names the Pod a process ran in (from the downward API: POD_NAMESPACE, POD_NAME,
// POD_UID).
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

// ownerRecord says which process a lock's host and pid stand for.
type ownerRecord struct {
	Host       string    `json:"host"`
	PID        int       `json:"pid"`
	BootID     string    `json:"bootId"`
	PIDNS      string    `json:"pidNamespace"`
	StartTicks uint64    `json:"startTicks"`
	Pod        *PodRef   `json:"pod,omitempty"`
	Written    time.Time `json:"written"`
}

// identity is where this process runs: the same for the CLI processes it starts.
type identity struct {
	Host   string
	BootID string
	PIDNS  string
	Pod    *PodRef
}

var selfIdentity = sync.OnceValue(func() identity {
	id := identity{Host: hostname()}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		id.BootID = strings.TrimSpace(string(b))
	}
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		id.PIDNS = ns
	}
	ns, name, uid := os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME"), os.Getenv("POD_UID")
	if ns != "" && name != "" && uid != "" {
		id.Pod = &PodRef{Namespace: ns, Name: name, UID: uid}
	}
	return id
})

// PodProbe proves a lock owner in another Pod gone. The operator provides it for its leader
// Lease, `tfrs serve --leader-elect` for the tfrs-api-locks Lease: such a lock is broken only
// while the Lease is held, so two replicas never both decide. Without a probe, a lock from
// another machine is reported, never broken.
type PodProbe interface {
	// Leading reports whether this process holds the leader Lease now.
	Leading(ctx context.Context) bool
	// PodGone reports whether the Pod no longer exists or is another Pod of the same name
	// (another UID).
	PodGone(ctx context.Context, pod PodRef) (bool, error)
}

// liveness is what judgeLock may ask about the world; a field per question, so tests fake it.
type liveness struct {
	me   identity
	proc func(pid int) procInfo
	pods PodProbe
}

// judgeLock decides whether a lock's owner is provably gone, and says why either way. recs are
// the owner records for the lock's host and pid.
func judgeLock(ctx context.Context, lock LockOwner, recs []ownerRecord, l liveness) (bool, string) {
	if len(recs) == 0 {
		return false, fmt.Sprintf("no TFRS owner record for %s pid %d (a process outside TFRS, or one killed before it recorded itself): check it is gone, then run `pulumi cancel`", lock.Host, lock.PID)
	}
	var whys []string
	for _, r := range recs {
		gone, why := recordGone(ctx, r, l)
		if !gone {
			return false, why
		}
		whys = append(whys, why)
	}
	return true, strings.Join(whys, "; ")
}

// recordGone decides for one record.
func recordGone(ctx context.Context, r ownerRecord, l liveness) (bool, string) {
	if r.BootID != "" && r.BootID == l.me.BootID && r.PIDNS != "" && r.PIDNS == l.me.PIDNS {
		// Same kernel, same pid namespace: the pid is this process's to look up.
		p := l.proc(r.PID)
		switch {
		case !p.alive:
			return true, fmt.Sprintf("pid %d is gone", r.PID)
		case p.startTicks != 0 && p.startTicks != r.StartTicks:
			return true, fmt.Sprintf("pid %d was reused by a process started later", r.PID)
		}
		return false, fmt.Sprintf("pid %d on this machine is still running", r.PID)
	}
	if r.Pod != nil {
		if l.pods == nil || !l.pods.Leading(ctx) {
			return false, fmt.Sprintf("held by pod %s; only the operator holding the leader Lease may break it", r.Pod)
		}
		gone, err := l.pods.PodGone(ctx, *r.Pod)
		if err != nil {
			return false, fmt.Sprintf("held by pod %s, which could not be checked: %v", r.Pod, err)
		}
		if gone {
			return true, fmt.Sprintf("pod %s (uid %s) no longer exists", r.Pod, r.Pod.UID)
		}
		return false, fmt.Sprintf("held by pod %s, which still exists", r.Pod)
	}
	return false, fmt.Sprintf("held by pid %d on another machine or pid namespace (host %s); its liveness cannot be proven from here", r.PID, r.Host)
}

// Record keys are flat, "<host>_<pid>_<boot id>_<pid namespace>_<start ticks>.json", with "_"
// kept out of every part: a file backend would otherwise keep an empty directory per pid (or
// per pod) forever, since deleting a blob leaves its directories behind.
var reUnsafeKey = regexp.MustCompile(`[^A-Za-z0-9.-]`)

func keyPart(s string) string {
	s = reUnsafeKey.ReplaceAllString(s, "-")
	if s == "" || s == "." || s == ".." {
		return "-"
	}
	return s
}

// ownerRecordDir is the key prefix of every record for host and pid.
func ownerRecordDir(host string, pid int) string {
	return ownerRecordPrefix + keyPart(host) + "_" + strconv.Itoa(pid) + "_"
}

func ownerRecordKey(r ownerRecord) string {
	return ownerRecordDir(r.Host, r.PID) + keyPart(r.BootID) + "_" + keyPart(r.PIDNS) + "_" + strconv.FormatUint(r.StartTicks, 10) + ".json"
}

// recordOwner writes the owner record of a CLI process just started; the returned func
// removes it (called when the process exited by itself). Failures are logged and tolerated:
// without a record the worst case is a lock that is reported instead of broken.
func (e *Engine) recordOwner(pid int) func() {
	b, err := e.bucket(context.Background())
	if err != nil {
		e.opts.Logger.Warn("cannot record the lock owner", "pid", pid, "err", e.red.redact(err.Error()))
		return func() {}
	}
	me := selfIdentity()
	r := ownerRecord{Host: me.Host, PID: pid, BootID: me.BootID, PIDNS: me.PIDNS, Pod: me.Pod, Written: time.Now().UTC()}
	if p := lookupProc(pid); p.alive {
		r.StartTicks = p.startTicks
	}
	body, _ := json.Marshal(r)
	key := ownerRecordKey(r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.WriteAll(ctx, key, body, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		e.opts.Logger.Warn("cannot record the lock owner", "pid", pid, "err", e.red.redact(err.Error()))
		return func() {}
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			e.opts.Logger.Warn("cannot remove a lock owner record", "key", key, "err", e.red.redact(err.Error()))
		}
	}
}

// RecordLockOwner records pid, a process of this machine that the caller started and that may
// take a stack's backend lock (a `pulumi` run by a wrapper beside TFRS, say), so that a lock it
// leaves behind can be proven stale like the engine's own. release removes the record; call it
// when the process exited by itself.
func (e *Engine) RecordLockOwner(pid int) (release func()) { return e.recordOwner(pid) }

// ownerRecords lists the records that can stand for a lock's host and pid.
func (e *Engine) ownerRecords(ctx context.Context, lock LockOwner) ([]ownerRecord, []string, error) {
	b, err := e.bucket(ctx)
	if err != nil {
		return nil, nil, err
	}
	var recs []ownerRecord
	var keys []string
	it := b.List(&blob.ListOptions{Prefix: ownerRecordDir(lock.Host, lock.PID)})
	for {
		obj, err := it.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, nil, err
		}
		if obj.IsDir || !strings.HasSuffix(obj.Key, ".json") {
			continue
		}
		body, err := b.ReadAll(ctx, obj.Key)
		if err != nil {
			if gcerrors.Code(err) == gcerrors.NotFound {
				continue // removed meanwhile: its CLI exited by itself
			}
			return nil, nil, err
		}
		var r ownerRecord
		if json.Unmarshal(body, &r) != nil || r.PID != lock.PID || r.Host != lock.Host {
			continue
		}
		recs = append(recs, r)
		keys = append(keys, obj.Key)
	}
	return recs, keys, nil
}

// lockKey is the backend key of a lock from the location the CLI prints for it, checked to be
// a lock of this stack: the engine deletes this key and nothing else.
func lockKey(location, stack string) (string, error) {
	p := location
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	i := strings.Index(p, "/.pulumi/locks/")
	if i < 0 {
		return "", fmt.Errorf("lock location %q is not under .pulumi/locks", location)
	}
	key := p[i+1:]
	dir, file := path.Split(key)
	if path.Clean(key) != key || !strings.HasSuffix(file, ".json") ||
		dir != stackLockDir(stack) {
		return "", fmt.Errorf("lock location %q is not a lock of stack %s", location, stack)
	}
	return key, nil
}

// lockHeld reports whether the lock still exists in the backend.
func (e *Engine) lockHeld(ctx context.Context, stack string, lock LockOwner) (bool, error) {
	key, err := lockKey(lock.Location, stack)
	if err != nil {
		return false, err
	}
	b, err := e.bucket(ctx)
	if err != nil {
		return false, err
	}
	return b.Exists(ctx, key)
}

// breakLock deletes exactly the lock judged stale, after reading it again: a lock that is gone
// or now says something else (never expected: lock keys are unique per CLI process) is left
// alone. It reports whether it deleted.
func (e *Engine) breakLock(ctx context.Context, stack string, lock LockOwner) (bool, error) {
	key, err := lockKey(lock.Location, stack)
	if err != nil {
		return false, err
	}
	b, err := e.bucket(ctx)
	if err != nil {
		return false, err
	}
	body, err := b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return false, nil // another breaker was first, or the owner released it after all
	}
	if err != nil {
		return false, err
	}
	var c struct {
		PID      int       `json:"pid"`
		Hostname string    `json:"hostname"`
		Time     time.Time `json:"timestamp"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(body), &c); err != nil {
		return false, fmt.Errorf("read lock %s: %w", key, err)
	}
	if c.PID != lock.PID || c.Hostname != lock.Host || c.Time.Unix() != lock.Time.Unix() {
		return false, nil
	}
	if err := b.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return false, err
	}
	return true, nil
}

// removeRecords deletes the owner records of a broken lock (best effort: a leftover record of
// a dead process only ever proves that process gone).
func (e *Engine) removeRecords(ctx context.Context, keys []string) {
	b, err := e.bucket(ctx)
	if err != nil {
		return
	}
	for _, k := range keys {
		_ = b.Delete(ctx, k)
	}
}
