package program

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Redacted stands in for a secret output's value wherever an Output is printed.
const Redacted = "[secret]"

// Output is one stack output. For a secret, Value is nil and Secret true; the plaintext is
// kept unexported so JSON encoding, %v and %+v never print it.
type Output struct {
	Value  any  `json:"value,omitempty"`
	Secret bool `json:"secret,omitempty"`
	secret any
}

// Reveal returns the value, including a secret's plaintext. Call it only to pass the value on
// to another program as a secret, never to log or return it.
func (o Output) Reveal() any {
	if o.Secret {
		return o.secret
	}
	return o.Value
}

// String never shows a secret.
func (o Output) String() string {
	if o.Secret {
		return Redacted
	}
	return fmt.Sprint(o.Value)
}

// GoString keeps %#v from printing the hidden field.
func (o Output) GoString() string { return "program.Output{" + o.String() + "}" }

// MarshalJSON is explicit so a future field cannot leak by accident.
func (o Output) MarshalJSON() ([]byte, error) {
	if o.Secret {
		return json.Marshal(struct {
			Secret bool `json:"secret"`
		}{true})
	}
	return json.Marshal(struct {
		Value any `json:"value"`
	}{o.Value})
}

// Outputs are a stack's outputs by name.
type Outputs map[string]Output

// Keys returns the output names, sorted.
func (o Outputs) Keys() []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// String returns a plain value by name ("" when missing or not a string); secrets need Reveal.
func (o Outputs) String(key string) string {
	v, ok := o[key]
	if !ok || v.Secret {
		return ""
	}
	s, _ := v.Value.(string)
	return s
}

// NewOutput makes an output value as a stack reports it: a secret one keeps its value hidden
// behind Reveal. The engine builds every Output with it (and fakes of the engine do too).
func NewOutput(v any, secret bool) Output {
	if secret {
		return Output{Secret: true, secret: v}
	}
	return Output{Value: v}
}
