package sqlite

import (
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/embedauth/connect/store"
)

// checkText rejects, with store.ErrInvalid, a record holding a string that
// Postgres cannot store: one with a NUL byte or invalid UTF-8. It walks
// every string of v, including map keys and nested values, so that the
// SQLite store refuses what the Postgres store refuses (SQLite would keep
// it, and encoding/json would silently replace invalid UTF-8). Lookups
// check their text arguments too: Postgres refuses to compare such text.
func checkText(v any) error {
	return walkText(reflect.ValueOf(v), 0)
}

// maxTextDepth bounds the walk. It is far above what the API lets in (JSON
// nested at most 64 levels, two steps each here: a map and an interface),
// so that this store never refuses what the Postgres store keeps.
const maxTextDepth = 512

func walkText(v reflect.Value, depth int) error {
	if depth > maxTextDepth {
		return fmt.Errorf("%w: value nested too deeply", store.ErrInvalid)
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
			return fmt.Errorf("%w: text %q holds a NUL byte or invalid UTF-8", store.ErrInvalid, s)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return walkText(v.Elem(), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if err := walkText(v.Field(i), depth+1); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // bytes, not text
		}
		for i := range v.Len() {
			if err := walkText(v.Index(i), depth+1); err != nil {
				return err
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if err := walkText(it.Key(), depth+1); err != nil {
				return err
			}
			if err := walkText(it.Value(), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
