// SPDX-License-Identifier: Apache-2.0

//go:build !cgo

package capi

// cmr is a C library, which Go calls through cgo: CGO_ENABLED=0 cannot
// build the binding. Build with CGO_ENABLED=1 (the default where a C
// compiler is installed), a C compiler and cmr's cmr.pc on PKG_CONFIG_PATH.
// The compiler's error names the identifier below.
var _ = cmr_go_binding_needs_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler
