package integrations

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"
)

// ParamTree is a mapping that keeps the order of its keys, as a provider
// file writes it: the nested token_params of a TWO_STEP provider, whose
// XML body must list its elements in that order. A value is a string, a
// bool, a number (float64), nil, a ParamTree or a []any of those.
type ParamTree []ParamEntry

// ParamEntry is one key of a ParamTree and its value.
type ParamEntry struct {
	Key   string
	Value any
}

// Get returns the value of key and whether it is there.
func (t ParamTree) Get(key string) (any, bool) {
	for _, e := range t {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

// Clone returns a deep copy of t.
func (t ParamTree) Clone() ParamTree {
	if t == nil {
		return nil
	}
	out := make(ParamTree, len(t))
	for i, e := range t {
		out[i] = ParamEntry{e.Key, cloneTreeValue(e.Value)}
	}
	return out
}

func cloneTreeValue(v any) any {
	switch x := v.(type) {
	case ParamTree:
		return x.Clone()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneTreeValue(e)
		}
		return out
	}
	return v
}

// UnmarshalYAML reads a mapping, keeping its order.
func (t *ParamTree) UnmarshalYAML(n *yaml.Node) error {
	v, err := treeValueFromYAML(n)
	if err != nil {
		return err
	}
	tree, ok := v.(ParamTree)
	if !ok && v != nil {
		return fmt.Errorf("line %d: want a mapping", n.Line)
	}
	*t = tree
	return nil
}

func treeValueFromYAML(n *yaml.Node) (any, error) {
	n = deref(n)
	if n == nil {
		return nil, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		out := make(ParamTree, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k == nil || k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: want a text key", n.Line)
			}
			v, err := treeValueFromYAML(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			out = append(out, ParamEntry{k.Value, v})
		}
		return out, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := treeValueFromYAML(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		var x any
		if err := n.Decode(&x); err != nil {
			return nil, err
		}
		switch v := x.(type) {
		case string, bool, float64, nil:
			return v, nil
		case int:
			return float64(v), nil
		case int64:
			return float64(v), nil
		case uint64:
			return float64(v), nil
		}
		return n.Value, nil
	}
	return nil, fmt.Errorf("line %d: unsupported value", n.Line)
}

// MarshalYAML writes the mapping in its order.
func (t ParamTree) MarshalYAML() (any, error) {
	return treeValueToYAML(t)
}

func treeValueToYAML(v any) (*yaml.Node, error) {
	switch x := v.(type) {
	case ParamTree:
		n := &yaml.Node{Kind: yaml.MappingNode}
		for _, e := range x {
			c, err := treeValueToYAML(e.Value)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: e.Key}, c)
		}
		return n, nil
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, e := range x {
			c, err := treeValueToYAML(e)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		return n, nil
	}
	n := &yaml.Node{}
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	return n, nil
}

// MarshalJSON writes a JSON object with the keys in order.
func (t ParamTree) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range t {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.Key)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(e.Value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a JSON object, keeping the order of its keys.
func (t *ParamTree) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	v, err := treeValueFromJSON(dec)
	if err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("integrations: trailing data after a parameter tree")
	}
	tree, ok := v.(ParamTree)
	if !ok && v != nil {
		return errors.New("integrations: a parameter tree must be a JSON object")
	}
	*t = tree
	return nil
}

func treeValueFromJSON(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch d := tok.(type) {
	case json.Delim:
		switch d {
		case '{':
			out := ParamTree{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := treeValueFromJSON(dec)
				if err != nil {
					return nil, err
				}
				out = append(out, ParamEntry{k, v})
			}
			_, err := dec.Token()
			return out, err
		case '[':
			out := []any{}
			for dec.More() {
				v, err := treeValueFromJSON(dec)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			_, err := dec.Token()
			return out, err
		}
		return nil, fmt.Errorf("integrations: unexpected %v", d)
	}
	return tok, nil
}
