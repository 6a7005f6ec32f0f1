# SPDX-License-Identifier: Apache-2.0
# cmake -DINPUT=file -DOUTPUT=file.c -DNAME=symbol -P embed_text.cmake: writes
# a C file defining `const char NAME[]` (INPUT's bytes, NUL-terminated) and
# `const size_t NAME_length` (their count), so a library carries the file.
file(READ "${INPUT}" content HEX)
string(LENGTH "${content}" hex_length)
math(EXPR length "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," content "${content}")
file(WRITE "${OUTPUT}" "/* Made by cmake/embed_text.cmake from ${INPUT}: do not edit. */\n#include <stddef.h>\n"
     "const char ${NAME}[] = {${content} 0};\nconst size_t ${NAME}_length = ${length};\n")
