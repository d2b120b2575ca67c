// The qlanv dialect (Hopper level). Include this, not the .inc files.
#pragma once

#include "dialects/qla/IR/QlaDialect.h"

#include "dialects/qlanv/IR/QlanvDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/qlanv/IR/QlanvTypes.h.inc"

#define GET_OP_CLASSES
#include "dialects/qlanv/IR/QlanvOps.h.inc"
