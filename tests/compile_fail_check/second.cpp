// Its error names a type of the namespace the merged translation unit wraps it in.
// expect: no match for 'operator+' (operand types are 'thing' and 'int')
