package schema

import (
	"reflect"
	"testing"
	"time"
)

// Types that share a type through several fields at each level: written
// out as a tree, planFan7 has 6^7 fields.
type (
	planFan0 struct{ X, Y int }
	planFan1 struct{ A, B, C, D, E, F *planFan0 }
	planFan2 struct{ A, B, C, D, E, F *planFan1 }
	planFan3 struct{ A, B, C, D, E, F *planFan2 }
	planFan4 struct{ A, B, C, D, E, F []planFan3 }
	planFan5 struct{ A, B, C, D, E, F *planFan4 }
	planFan6 struct{ A, B, C, D, E, F *planFan5 }
	planFan7 struct{ A, B, C, D, E, F *planFan6 }
)

// A plan is made once per type it meets at each depth, so a type shared
// by many fields costs no more than once: the plan of planFan7 takes time
// linear in its number of types, not in the 6^7 fields of its tree.
func TestNewPlanSharedTypes(t *testing.T) {
	start := time.Now()
	p := NewPlan(reflect.TypeFor[planFan7]())
	elapsed := time.Since(start)
	if p == nil {
		t.Fatal("no plan")
	}
	if elapsed > 100*time.Millisecond {
		t.Errorf("NewPlan took %v", elapsed)
	}
	// The shared plans decode as separate ones would.
	if p.fields[0].plan.elem != p.fields[3].plan.elem {
		t.Error("the plan of a type met twice at one depth is not shared")
	}
}
