// libmt C++ API: everything a program needs to translate with a model file.
#pragma once

#include "mt/languages.hpp"
#include "mt/model.hpp"
#include "mt/model_spec.hpp"
#include "mt/model_writer.hpp"
#include "mt/sentence_splitter.hpp"
#include "mt/version.hpp"
#include "mt/session.hpp"
#include "mt/status.hpp"
