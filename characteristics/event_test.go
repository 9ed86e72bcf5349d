package characteristics

import (
	"reflect"
	"testing"
	"unsafe"
)

// fill sets every field reachable in v, exported or not, to a non-zero value.
func fill(v reflect.Value) {
	if !v.CanSet() {
		v = reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i))
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		v.Set(p)
	}
}

// TestResetClearsEveryField fills every field of an Event, including any
// added after Reset was written, and checks Reset clears each of them but the
// slices' backing arrays and the normaliser's buffers.
func TestResetClearsEveryField(t *testing.T) {
	var e Event
	fill(reflect.ValueOf(&e).Elem())
	e.Reset()
	v := reflect.ValueOf(e)
	for i := range v.NumField() {
		name, f := v.Type().Field(i).Name, v.Field(i)
		switch name {
		case "Headers", "Cookies", "Vars":
			if f.Len() != 0 || f.Cap() == 0 {
				t.Errorf("%s: len %d cap %d after Reset, want 0 and the array kept", name, f.Len(), f.Cap())
			}
		case "nrm":
			if e.nrm.done {
				t.Errorf("nrm.done after Reset")
			}
			if cap(e.nrm.pathBuf) == 0 {
				t.Errorf("nrm buffers dropped by Reset")
			}
		default:
			if !f.IsZero() {
				t.Errorf("%s = %v after Reset, want zero", name, f)
			}
		}
	}
}

func TestResetAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	var e Event
	e.Headers = append(e.Headers, Field{"a", "b"})
	if n := testing.AllocsPerRun(100, e.Reset); n != 0 {
		t.Errorf("Reset allocates %v times", n)
	}
}

func BenchmarkReset(b *testing.B) {
	var e Event
	b.ReportAllocs()
	for b.Loop() {
		e.Path, e.UserAgent = "/", "ua"
		e.Headers = append(e.Headers, Field{"a", "b"})
		e.Reset()
	}
}
