package revert

import (
	"reflect"
	"testing"
)

func TestFailRunsNewestFirstOnce(t *testing.T) {
	var ran []int
	r := New()
	r.Add(func() { ran = append(ran, 1) })
	r.Add(func() { ran = append(ran, 2) })
	r.Add(func() { ran = append(ran, 3) })
	r.Fail()
	r.Fail() // a deferred Fail after an explicit one
	if !reflect.DeepEqual(ran, []int{3, 2, 1}) {
		t.Fatalf("undos ran %v, want [3 2 1] once", ran)
	}
}

func TestSuccessKeepsTheWork(t *testing.T) {
	ran := false
	r := New()
	r.Add(func() { ran = true })
	r.Success()
	r.Fail()
	if ran {
		t.Fatal("an undo ran after Success")
	}
}

func TestCloneOutlivesSuccess(t *testing.T) {
	var ran []string
	r := New()
	r.Add(func() { ran = append(ran, "row") })
	r.Add(func() { ran = append(ran, "socket") })
	later := r.Clone()
	r.Success()
	r.Fail()
	if len(ran) != 0 {
		t.Fatalf("the original ran %v after Success", ran)
	}

	r.Add(func() { ran = append(ran, "not the clone's") })
	later.Fail()
	if !reflect.DeepEqual(ran, []string{"socket", "row"}) {
		t.Fatalf("the clone ran %v, want [socket row]", ran)
	}
}

func TestNilHasNothingToUndo(t *testing.T) {
	var r *Reverter
	r.Fail()
}
