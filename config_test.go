package acpguard

import (
	"reflect"
	"testing"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/internal/pipeline"
)

// TestOptionsCarryEveryField: Config.options hands the pipeline every
// field of Config under its own name (Catalogue as its Engine), and the
// pipeline reads nothing Config does not have, so a field added to one and
// not to the conversion fails here.
func TestOptionsCarryEveryField(t *testing.T) {
	c := Config{Policy: &Policy{}, Catalogue: DefaultCatalogue(), overlay: &catalogue.Overlay{}}
	cv := reflect.ValueOf(&c).Elem()
	for i := range cv.NumField() {
		f := cv.Type().Field(i)
		if f.IsExported() && cv.Field(i).IsZero() {
			fill(t, f.Name, cv.Field(i))
		}
	}
	o := c.options()
	ov := reflect.ValueOf(o)
	optionOf := map[string]string{"Catalogue": "Engine", "overlay": "Overlay"}
	seen := map[string]bool{}
	for i := range cv.NumField() {
		name := cv.Type().Field(i).Name
		oname := name
		if n, ok := optionOf[name]; ok {
			oname = n
		}
		seen[oname] = true
		of := ov.FieldByName(oname)
		if !of.IsValid() {
			t.Errorf("Config.%s: pipeline.Options has no %s", name, oname)
			continue
		}
		if of.IsZero() {
			t.Errorf("Config.%s is not carried to pipeline.Options.%s", name, oname)
		}
	}
	for i := range ov.NumField() {
		if name := ov.Type().Field(i).Name; !seen[name] {
			t.Errorf("pipeline.Options.%s is no field of Config", name)
		}
	}
	if o.Policy != &c.Policy.doc || o.Engine != c.Catalogue.engine || o.Overlay != c.overlay || o.Getenv == nil || o.OnEvent == nil {
		t.Errorf("options %+v: the policy, catalogue, overlay or functions are not Config's", o)
	}
	if _, ok := reflect.TypeFor[pipeline.Options]().FieldByName("Catalogue"); ok {
		t.Error("pipeline.Options.Catalogue: the pipeline takes the engine")
	}
}

// fill sets v (a field of Config named name) to a value that is not zero.
func fill(t *testing.T, name string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint64:
		v.SetUint(7)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.Func:
		v.Set(reflect.MakeFunc(v.Type(), func([]reflect.Value) []reflect.Value {
			out := make([]reflect.Value, v.Type().NumOut())
			for i := range out {
				out[i] = reflect.Zero(v.Type().Out(i))
			}
			return out
		}))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	default:
		t.Fatalf("Config.%s: fill does not know a %s", name, v.Kind())
	}
}
