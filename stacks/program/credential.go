// Package program is what a stack program gets from the engine that runs it, without linking
// the engine (the Automation API driver): generated credentials that stay stable across runs,
// and the Output values a parent stack hands down. The engine binds a run's credentials with
// WithCredentials; programs call Credential.
package program

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"regexp"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Generated credentials (database passwords, MinIO keys, …) must be created once and then stay
// the same for the life of the stack; a password that changes on every up breaks every client
// that already has it.
//
// How it works: Credential registers a small component resource, type CredentialType, named
// after the credential, whose only output is the value as a secret. RegisterResourceOutputs
// writes it to the state at that moment (encrypted by the stack's secrets provider), not at the
// end of the run, so even a run killed right after generating the value keeps it. Before
// every operation the engine reads these outputs back from the state and binds them to the
// run's pulumi.Context (WithCredentials); Credential returns the bound value instead of
// generating a new one. Only the names the run rotates are regenerated. The value reaches the
// program as a secret Output, so Pulumi encrypts it wherever it flows and masks it in logs; the
// engine also hears of it (WithCredentials' reveal callback) to scrub it from its messages.

// CredentialType is the type token of the component that carries a generated credential. The
// token predates this package and is part of every stack's URNs: never change it.
const CredentialType = "tfrs:engine:Credential"

// credentialAlphabet avoids characters that need quoting in URLs, shells, TOML and DSNs.
const credentialAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

var reCredentialName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`)

// CredentialOption tunes a generated credential (only the first generation uses it).
type CredentialOption func(*credentialSpec)

type credentialSpec struct {
	length   int
	alphabet string
}

// WithLength sets the number of characters (default 32).
func WithLength(n int) CredentialOption { return func(s *credentialSpec) { s.length = n } }

// WithAlphabet sets the characters to draw from (default letters and digits).
func WithAlphabet(a string) CredentialOption { return func(s *credentialSpec) { s.alphabet = a } }

// credentialComponent is the resource that carries the value in state.
type credentialComponent struct {
	pulumi.ResourceState
}

// binding is what the engine knows for one run of one stack.
type binding struct {
	mu     sync.Mutex
	prev   map[string]string // values read from state before the run
	rotate map[string]bool
	used   map[string]pulumi.StringOutput
	reveal func(string) // told every value the run uses; nil under mocks
	// generated is told the values this run created (new or rotated); nil unless the engine
	// asked (a preview that saves a plan carries them to the Up that applies it).
	generated func(name, value string)
}

var bindings sync.Map // *pulumi.Context -> *binding

func bindCredentials(ctx *pulumi.Context, prev map[string]string, rotate []string, reveal func(string), generated func(name, value string)) {
	b := &binding{prev: prev, rotate: map[string]bool{}, used: map[string]pulumi.StringOutput{}, reveal: reveal, generated: generated}
	for _, r := range rotate {
		b.rotate[r] = true
	}
	bindings.Store(ctx, b)
}

func unbindCredentials(ctx *pulumi.Context) { bindings.Delete(ctx) }

// Credential returns the stack's credential called name: the value from earlier runs, or a new
// crypto/rand value the first time (or when the run rotates it). Call it from a program run by
// the engine; under pulumi.WithMocks it still works and generates a fresh value per run.
func Credential(ctx *pulumi.Context, name string, opts ...CredentialOption) (pulumi.StringOutput, error) {
	if !reCredentialName.MatchString(name) {
		return pulumi.StringOutput{}, fmt.Errorf("credential name %q: want [a-zA-Z0-9_.-], at most 63 characters", name)
	}
	spec := credentialSpec{length: 32, alphabet: credentialAlphabet}
	for _, o := range opts {
		o(&spec)
	}
	if spec.length < 8 || len(spec.alphabet) < 2 {
		return pulumi.StringOutput{}, fmt.Errorf("credential %q: length must be >= 8 and the alphabet >= 2 characters", name)
	}
	v, _ := bindings.LoadOrStore(ctx, &binding{prev: map[string]string{}, rotate: map[string]bool{}, used: map[string]pulumi.StringOutput{}})
	b := v.(*binding)
	b.mu.Lock()
	defer b.mu.Unlock()
	if out, ok := b.used[name]; ok {
		return out, nil
	}
	value, ok := b.prev[name]
	if !ok || value == "" || b.rotate[name] {
		var err error
		if value, err = randomString(spec.length, spec.alphabet); err != nil {
			return pulumi.StringOutput{}, fmt.Errorf("credential %q: %w", name, err)
		}
		if b.generated != nil {
			b.generated(name, value)
		}
	}
	if b.reveal != nil {
		b.reveal(value)
	}
	secret := pulumi.ToSecret(pulumi.String(value)).(pulumi.StringOutput)
	comp := &credentialComponent{}
	if err := ctx.RegisterComponentResource(CredentialType, name, comp); err != nil {
		return pulumi.StringOutput{}, fmt.Errorf("credential %q: %w", name, err)
	}
	if err := ctx.RegisterResourceOutputs(comp, pulumi.Map{"value": secret}); err != nil {
		return pulumi.StringOutput{}, fmt.Errorf("credential %q: %w", name, err)
	}
	b.used[name] = secret
	return secret, nil
}

// randomString draws uniformly from alphabet with crypto/rand (rand.Int rejects the biased
// tail, unlike a byte modulo).
func randomString(n int, alphabet string) (string, error) {
	out := make([]byte, n)
	max := big.NewInt(int64(len(alphabet)))
	for i := range out {
		k, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		out[i] = alphabet[k.Int64()]
	}
	return string(out), nil
}

// WithCredentials binds a stack's known credentials (prev, read from its state) to a run of
// fn: Credential returns them instead of generating new values, except the names in rotate.
// reveal, when set, is told every value the run uses, so the caller can scrub it from logs.
func WithCredentials(fn pulumi.RunFunc, prev map[string]string, rotate []string, reveal func(string)) pulumi.RunFunc {
	return WithCredentialsRecorded(fn, prev, rotate, reveal, nil)
}

// WithCredentialsRecorded is WithCredentials that also tells generated (when set) each value
// the run created, by name.
func WithCredentialsRecorded(fn pulumi.RunFunc, prev map[string]string, rotate []string, reveal func(string), generated func(name, value string)) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		bindCredentials(ctx, prev, rotate, reveal, generated)
		defer unbindCredentials(ctx)
		return fn(ctx)
	}
}
