package jsbox_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/embedauth/connect/internal/jsbox"
)

// TestFunc: a host function gets its arguments as JSON decodes them and
// answers JSON; an error it returns is thrown as an Error, a *Throw as
// the value it holds (an Error with the fields of an object).
func TestFunc(t *testing.T) {
	t.Parallel()
	b := newBox(t, jsbox.Options{})
	var got []any
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Func("echo", func(args []any) (any, error) {
		got = args
		return map[string]any{"args": args, "raw": json.RawMessage(`{"n":1}`)}, nil
	}))
	must(b.Func("fail", func([]any) (any, error) { return nil, errors.New("the host says no") }))
	must(b.Func("axios", func([]any) (any, error) {
		return nil, &jsbox.Throw{JSON: json.RawMessage(`{"name":"AxiosError","message":"Request failed with status code 404","code":"ERR_BAD_REQUEST","response":{"status":404,"data":{"error":"not found"}}}`)}
	}))
	must(b.Func("throwString", func([]any) (any, error) { return nil, &jsbox.Throw{JSON: json.RawMessage(`"plain"`)} }))

	v, err := b.Eval(`JSON.stringify(echo(1, 'two', { three: [3] }, undefined, null, true))`)
	if err != nil || v != `{"args":[1,"two",{"three":[3]},null,null,true],"raw":{"n":1}}` {
		t.Errorf("echo: %v, %v", v, err)
	}
	if len(got) != 6 || got[0] != 1.0 || got[1] != "two" {
		t.Errorf("the host got %#v", got)
	}
	for src, want := range map[string]string{
		`try { fail() } catch (e) { [e instanceof Error, e.message].join() }`:                                                                       "true,the host says no",
		`try { axios() } catch (e) { [e instanceof Error, e.name, e.message, e.code, e.response.status, e.response.data.error, String(e)].join() }`: "true,AxiosError,Request failed with status code 404,ERR_BAD_REQUEST,404,not found,AxiosError: Request failed with status code 404",
		`try { throwString() } catch (e) { typeof e + ' ' + e }`:                                                                                    "string plain",
		`Object.keys(globalThis).includes('echo') + ' ' + echo.name + ' ' + typeof __jsbox_func_echo`:                                               "false echo undefined",
	} {
		if v, err := b.Eval(src); err != nil || v != want {
			t.Errorf("%s = %v, %v; want %s", src, v, err, want)
		}
	}
	if err := b.Func("echo", func([]any) (any, error) { return nil, nil }); err == nil {
		t.Error("installed twice")
	}
	if err := b.Func("not a name", func([]any) (any, error) { return nil, nil }); err == nil {
		t.Error("installed under a name that is no identifier")
	}
	// The host's setup code may take the function into a closure.
	if v, err := b.Eval(`const hidden = echo; delete globalThis.echo; typeof echo + ' ' + hidden(1).args[0]`); err != nil || v != "undefined 1" {
		t.Errorf("taken away: %v, %v", v, err)
	}
}
