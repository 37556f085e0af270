package main

import (
	"math/big"

	"github.com/zclconf/go-cty/cty"
)

// toJSON is a value as JSON, with unknown and null parts as null (the caller gets `known` beside it).
func toJSON(v cty.Value) interface{} {
	v, _ = v.UnmarkDeep()
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	t := v.Type()
	switch {
	case t == cty.Bool:
		return v.True()
	case t == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			if i, acc := bf.Int64(); acc == big.Exact {
				return i
			}
		}
		f, _ := bf.Float64()
		return f
	case t == cty.String:
		return v.AsString()
	case t.IsListType() || t.IsSetType() || t.IsTupleType():
		out := []interface{}{}
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, toJSON(e))
		}
		return out
	case t.IsMapType() || t.IsObjectType():
		out := map[string]interface{}{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			out[k.AsString()] = toJSON(e)
		}
		return out
	}
	return nil
}
