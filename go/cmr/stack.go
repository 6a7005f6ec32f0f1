// SPDX-License-Identifier: Apache-2.0

package cmr

import "github.com/cmr-project/cmr/go/internal/capi"

// Stack is a stack of resources built from a text expression, e.g.
// "statistics(pool(system, initial_pool_size=1MiB))": a resource name,
// then in parentheses the upstream (itself an expression) and name=value
// parameters as the spec names them. Sizes are written as ParseSize
// reads them ("1.5GiB", "512 mb", or "80%" of the device's free memory). The
// Stack is a Resource (its top); it holds a share of every resource in it
// until Close.
type Stack struct {
	object
	stack capi.Struct_SS_cmr_stack
}

// ParseStack builds the stack expression describes. A bad expression is
// ErrInvalidArgument with a message naming the column and the problem.
func ParseStack(expression string) (*Stack, error) {
	if err := checkText(expression, "expression"); err != nil {
		return nil, err
	}
	var handle uintptr
	if err := check(capi.Cmr_stack_parse(expression, &handle)); err != nil {
		return nil, err
	}
	stack := capi.SwigcptrStruct_SS_cmr_stack(handle)
	var top uintptr
	if err := check(capi.Cmr_stack_ref(stack, &top)); err != nil {
		capi.Cmr_stack_destroy(stack)
		return nil, err
	}
	s := &Stack{stack: stack}
	destroy := func() *capi.Failure { return capi.Cmr_stack_destroy(stack) }
	if err := s.own(capi.SwigcptrCmr_resource_ref(top), "stack", destroy); err != nil {
		return nil, err
	}
	return s, nil
}

// Expression is the expression the stack was built from, with every
// default written out.
func (s *Stack) Expression() (string, error) {
	return readOpen(s.live, s.stack, capi.Cmr_stack_expression)
}

// Top is the outermost resource as a value of its own type (e.g. a
// *StatisticsResource for its counters), holding a share of its own: Close it too.
func (s *Stack) Top() (Resource, error) {
	return s.member(capi.Cmr_stack_ref)
}

// Leaf is the innermost resource, the one the others sit on, as Top is.
func (s *Stack) Leaf() (Resource, error) {
	return s.member(capi.Cmr_stack_leaf)
}

func (s *Stack) member(read func(capi.Struct_SS_cmr_stack, *uintptr) *capi.Failure) (Resource, error) {
	ref, err := readOpen(s.live, s.stack, read)
	if err != nil {
		return nil, err
	}
	return resourceOf(capi.SwigcptrCmr_resource_ref(ref))
}
