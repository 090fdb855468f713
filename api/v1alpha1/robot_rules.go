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
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PatternRobotType is the shape of spec.robotType: PatternRoutingName without '-'. A robot's
// objects, role, bucket and vhost are named "<robotType>-<robotId>…"; with no '-' in the type
// the first '-' of a name ends it, so two robots never map to one name (chat-bot/1 and
// chat/bot-1 would). The gateway refuses a '-' in X-TF-RobotType the same way
// (components/routing).
const PatternRobotType = `^[a-z0-9]+$`

var reRobotType = regexp.MustCompile(PatternRobotType)

// robotTypeErrors adds to the routing-name rules of spec.robotType the one that keeps robot
// names unambiguous (PatternRobotType).
func robotTypeErrors(p *field.Path, v string) field.ErrorList {
	if v == "" || !strings.Contains(v, "-") || !reRoutingName.MatchString(v) {
		return nil // empty or otherwise malformed: the routing-name rules report it
	}
	return field.ErrorList{field.Invalid(p, v, "must match "+PatternRobotType+": no '-', which ends the robot type in the robot's names (chat-bot/1 and chat/bot-1 would both be chat-bot-1)")}
}
