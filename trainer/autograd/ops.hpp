// Everything a model needs from the autograd: the graph and every op.
#pragma once

#include "autograd/activations.hpp"
#include "autograd/attention.hpp"
#include "autograd/dropout.hpp"
#include "autograd/elementwise.hpp"
#include "autograd/embedding.hpp"
#include "autograd/graph.hpp"
#include "autograd/linear.hpp"
#include "autograd/loss.hpp"
#include "autograd/norm.hpp"
