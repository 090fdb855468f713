/*
Copyright 2026 The TFRS Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	"slices"
	"strings"
	"testing"
)

// A '-' in spec.robotType is refused at that field (by Validate and by the CRD pattern), so
// chat-bot/1 cannot be created next to chat/bot-1; a '-' in robotId stays allowed.
func TestRobotTypeHasNoDash(t *testing.T) {
	for _, tc := range []struct {
		typ, id string
		fields  []string
	}{
		{"chat", "bot-1", nil},
		{"chat-bot", "1", []string{"spec.robotType"}},
		{"-chat", "1", []string{"spec.robotType"}},
		{"chat2", "r-001", nil},
	} {
		s := newServer(func(s *TFRServer) { s.Spec.RobotType, s.Spec.RobotID = tc.typ, tc.id })
		errs := s.Validate()
		if got := errorFields(errs); !slices.Equal(got, tc.fields) {
			t.Errorf("%s/%s: errors at %v, want %v: %v", tc.typ, tc.id, got, tc.fields, errs)
		}
		if tc.typ == "chat-bot" && !strings.Contains(errs.ToAggregate().Error(), "chat-bot-1") {
			t.Errorf("the refusal does not say why: %v", errs)
		}
	}
}
