package engine

import (
	"bytes"
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
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
)

// Saved plans: "show me the plan, then apply that plan and nothing else".
//
// A Preview with Request.SavePlan asks the CLI for Pulumi's update plan (`preview
// --save-plan`) and returns it as a Plan. An Up with Request.Plan runs `up --plan`: Pulumi
// refuses every step the plan does not contain (a replace where an update was planned, a
// changed property, a resource it did not plan), so what runs is what a reviewer read. A plan
// that no longer matches fails the Up with ErrPlanMismatch before the first deviating step.
//
// Two things make a plan appliable later, possibly by another process:
//   - it is taken on the real stack, never on a scratch state: the plan's secrets are
//     encrypted by the stack's own secrets provider, which a throwaway stack does not share.
//     A plan preview of a stack that does not exist yet therefore creates the (empty) stack
//     record, as an Up would; it creates no resource.
//   - the credentials the previewed run generated (a new database password, say) travel with
//     the plan, encrypted with the engine's passphrase under a salt of their own: the Up binds
//     exactly those values, so the planned Secret data is the data it writes.
//
// Callers keep plans where their door needs them: the operator and the HTTP API in the state
// backend beside the stack (StorePlan, LoadPlan, DiscardPlans), the CLI in a directory the CI
// job carries from the preview to the apply.

// ErrPlanMismatch: the Up was asked to apply a saved plan and the program would now do
// something else (the spec, a parent's outputs or the cluster changed since the preview).
// Nothing outside the plan ran; preview again for a new plan.
var ErrPlanMismatch = errors.New("the saved plan no longer matches what the program would do")

// ErrPlanNotFound: no saved plan with that id for that stack.
var ErrPlanNotFound = errors.New("saved plan not found")

// planFormat is the version of the Plan encoding; LoadPlan refuses others.
const planFormat = 1

// Plan is a saved update plan of one stack.
type Plan struct {
	Format int `json:"format"`
	// ID is derived from the content (see planID): the same id names the same plan on every
	// replica, and an edited plan has another id.
	ID      string    `json:"id"`
	Stack   string    `json:"stack"`
	Created time.Time `json:"created"`
	// Meta is the caller's (the generation it was taken for, the door); part of the id.
	Meta map[string]string `json:"meta,omitempty"`
	// Pulumi is the CLI's plan file. Its secrets are ciphertext of the stack's secrets provider.
	Pulumi json.RawMessage `json:"pulumi"`
	// Credentials are the ones the previewed run generated, encrypted (see sealCredentials).
	Credentials map[string]string `json:"credentials,omitempty"`
	// Salt of the credentials' key ("v1:<base64>").
	Salt string `json:"salt,omitempty"`
}

var rePlanID = regexp.MustCompile(`^[0-9a-f]{16}$`)

// ValidPlanID reports whether id has the form of a plan id (16 lowercase hex digits); ids come
// from users (an annotation, a request body, a file name) and name backend keys.
func ValidPlanID(id string) bool { return rePlanID.MatchString(id) }

// planID hashes everything that makes the plan what it is.
func planID(p *Plan) string {
	h := sha256.New()
	fmt.Fprintf(h, "tfrs-plan/%d\x00%s\x00", planFormat, p.Stack)
	h.Write(p.Pulumi)
	keys := make([]string, 0, len(p.Meta)+len(p.Credentials))
	for k := range p.Meta {
		keys = append(keys, "m:"+k)
	}
	for k := range p.Credentials {
		keys = append(keys, "c:"+k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := p.Credentials[strings.TrimPrefix(k, "c:")]
		if strings.HasPrefix(k, "m:") {
			v = p.Meta[strings.TrimPrefix(k, "m:")]
		}
		fmt.Fprintf(h, "\x00%s=%s", k, v)
	}
	fmt.Fprintf(h, "\x00%s", p.Salt)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Encode is the plan as stored (JSON); DecodePlan reads it back and checks it. The Pulumi
// plan is hashed byte for byte, so it is written as it is: json.Marshal would rewrite a raw
// "<", ">" or "&" (in a Helm chart's manifests, say) as \u003c…, and the plan read back
// would no longer match its id.
func (p *Plan) Encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// DecodePlan parses an encoded plan and verifies that its id matches its content, so a plan
// edited after review is refused instead of applied.
func DecodePlan(b []byte) (*Plan, error) {
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("saved plan: %w", err)
	}
	if p.Format != planFormat {
		return nil, fmt.Errorf("saved plan: format %d, this engine reads format %d", p.Format, planFormat)
	}
	if err := stackname.Validate(p.Stack); err != nil {
		return nil, fmt.Errorf("saved plan: %w", err)
	}
	if len(p.Pulumi) == 0 {
		return nil, fmt.Errorf("saved plan %s: no Pulumi plan inside", p.ID)
	}
	if want := planID(&p); p.ID != want {
		return nil, fmt.Errorf("saved plan %s: its content does not match its id (edited after it was saved?)", p.ID)
	}
	return &p, nil
}

// newPlan builds the Plan of a preview run from the CLI's plan file and the credentials the
// run generated.
func (e *Engine) newPlan(stack, file string, generated map[string]string, meta map[string]string) (*Plan, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read the plan the CLI wrote: %w", err)
	}
	// Compacted and HTML-escaped, as encoding/json writes an embedded RawMessage: the bytes
	// hashed are then the bytes every encoding of the plan holds.
	var compact, escaped bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("the plan the CLI wrote is not JSON: %w", err)
	}
	json.HTMLEscape(&escaped, compact.Bytes())
	p := &Plan{Format: planFormat, Stack: stack, Created: time.Now().UTC().Truncate(time.Second), Meta: meta, Pulumi: escaped.Bytes()}
	if len(generated) > 0 {
		if p.Salt, p.Credentials, err = e.sealCredentials(generated); err != nil {
			return nil, err
		}
	}
	p.ID = planID(p)
	return p, nil
}

// sealCredentials encrypts generated credentials with the passphrase (the key that protects
// the stacks' own secrets), so a plan in a CI artifact or the backend holds no plaintext.
// Another secrets provider has no key the engine can use: a plan that needs new credentials
// is refused there rather than stored in the clear.
func (e *Engine) sealCredentials(values map[string]string) (string, map[string]string, error) {
	if e.opts.passphrase == nil {
		return "", nil, fmt.Errorf("this plan generates new credentials (%s); saving them with the plan needs the passphrase secrets provider", strings.Join(sortedKeys(values), ", "))
	}
	salt := make([]byte, 8)
	if _, err := rand.Read(salt); err != nil {
		return "", nil, err
	}
	c := config.NewSymmetricCrypterFromPassphrase(*e.opts.passphrase, salt)
	out := map[string]string{}
	for k, v := range values {
		ct, err := c.EncryptValue(context.Background(), v)
		if err != nil {
			return "", nil, err
		}
		out[k] = ct
	}
	return "v1:" + base64.StdEncoding.EncodeToString(salt), out, nil
}

// openCredentials decrypts a plan's credentials; every value is also registered with the
// redactor, like credentials read from the state.
func (e *Engine) openCredentials(p *Plan) (map[string]string, error) {
	out := map[string]string{}
	if len(p.Credentials) == 0 {
		return out, nil
	}
	if e.opts.passphrase == nil {
		return nil, fmt.Errorf("saved plan %s carries credentials sealed with a passphrase; this engine has none", p.ID)
	}
	enc, ok := strings.CutPrefix(p.Salt, "v1:")
	salt, err := base64.StdEncoding.DecodeString(enc)
	if !ok || err != nil {
		return nil, fmt.Errorf("saved plan %s: bad salt", p.ID)
	}
	c := config.NewSymmetricCrypterFromPassphrase(*e.opts.passphrase, salt)
	for k, ct := range p.Credentials {
		v, err := c.DecryptValue(context.Background(), ct)
		if err != nil {
			return nil, fmt.Errorf("saved plan %s: its credentials do not decrypt with this engine's passphrase", p.ID)
		}
		e.red.add(v)
		out[k] = v
	}
	return out, nil
}

// writePlanFile puts the Pulumi plan where `up --plan` reads it (0600: it is ciphertext, but
// nobody else needs it) and returns the path.
func writePlanFile(dir string, p *Plan) (string, error) {
	f, err := os.CreateTemp(dir, "plan-*.json")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Write(p.Pulumi); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), f.Close()
}

// planFilePath is where a preview asks the CLI to write its plan.
func planFilePath(dir string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return filepath.Join(dir, "saved-plan-"+hex.EncodeToString(b[:])+".json")
}

// isPlanViolation recognises Pulumi refusing a step its plan does not allow.
func isPlanViolation(err error, diag []string) bool {
	if err == nil {
		return false
	}
	if strings.Contains(err.Error(), "violates plan") {
		return true
	}
	for _, d := range diag {
		if strings.Contains(d, "violates plan") {
			return true
		}
	}
	return false
}

// The backend keeps a stack's saved plans under tfrs/plans/<stack>/<id>.json, beside the
// stacks, so every replica of every door sees the same plans.
const plansPrefix = "tfrs/plans/"

func planKey(stack, id string) string { return plansPrefix + stack + "/" + id + ".json" }

// StorePlan saves p in the state backend.
func (e *Engine) StorePlan(ctx context.Context, p *Plan) error {
	if stackname.Validate(p.Stack) != nil || !ValidPlanID(p.ID) {
		return fmt.Errorf("store plan: bad stack or id")
	}
	b, err := p.Encode()
	if err != nil {
		return err
	}
	bkt, err := e.bucket(ctx)
	if err != nil {
		return fmt.Errorf("store plan: %w", err)
	}
	return bkt.WriteAll(ctx, planKey(p.Stack, p.ID), b, nil)
}

// LoadPlan reads a saved plan of stack from the backend (ErrPlanNotFound when there is none).
func (e *Engine) LoadPlan(ctx context.Context, stack, id string) (*Plan, error) {
	if stackname.Validate(stack) != nil || !ValidPlanID(id) {
		return nil, fmt.Errorf("%w: %q is not a plan id (16 hex digits)", ErrPlanNotFound, id)
	}
	bkt, err := e.bucket(ctx)
	if err != nil {
		return nil, fmt.Errorf("load plan: %w", err)
	}
	b, err := bkt.ReadAll(ctx, planKey(stack, id))
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("%w: %s has no plan %s", ErrPlanNotFound, stack, id)
	}
	if err != nil {
		return nil, fmt.Errorf("load plan: %w", err)
	}
	p, err := DecodePlan(b)
	if err != nil {
		return nil, err
	}
	if p.Stack != stack || p.ID != id {
		return nil, fmt.Errorf("load plan: %s holds a plan of %s", planKey(stack, id), p.Stack)
	}
	return p, nil
}

// DiscardPlans removes the stack's saved plans except keep (by id).
func (e *Engine) DiscardPlans(ctx context.Context, stack string, keep ...string) error {
	if stackname.Validate(stack) != nil {
		return fmt.Errorf("discard plans: bad stack name")
	}
	bkt, err := e.bucket(ctx)
	if err != nil {
		return fmt.Errorf("discard plans: %w", err)
	}
	it := bkt.List(&blob.ListOptions{Prefix: plansPrefix + stack + "/"})
	var errs []error
	for {
		obj, err := it.Next(ctx)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				errs = append(errs, err)
			}
			break
		}
		id := strings.TrimSuffix(path.Base(obj.Key), ".json")
		if slices.Contains(keep, id) {
			continue
		}
		if err := bkt.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
