package escalate

import "testing"

func TestParseShebang(t *testing.T) {
	for in, want := range map[string][3]string{
		"#!/bin/sh\necho":                {"/bin/sh", "", "ok"},
		"#! /usr/bin/env  python3 -u \n": {"/usr/bin/env", "python3 -u", "ok"},
		"#!\t/usr/bin/touch\tx y\n":      {"/usr/bin/touch", "x y", "ok"},
		"#!/usr/bin/touch\x00junk\n":     {"/usr/bin/touch", "", "ok"},
		"#!/bin/sh \x00-x\n":             {"/bin/sh", "", "ok"},
		"#!/bin/sh -a\x00b\n":            {"/bin/sh", "-a", "ok"},
		"#!\n":                           {"", "", ""},
		"#!   \n":                        {"", "", ""},
		"#!/no/newline":                  {"", "", ""},
		"#!/no/newline arg":              {"/no/newline", "arg", "ok"},
	} {
		i, a, ok := parseShebang([]byte(in))
		got := [3]string{i, a, map[bool]string{true: "ok"}[ok]}
		if got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
