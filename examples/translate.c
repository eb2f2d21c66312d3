/*
 * Translates one sentence with libmt's C API, in memory the program supplies:
 *
 *   translate_c MODEL.mtm "A sentence."
 *
 * The session's memory need is asked first (mt_session_memory_size) and the
 * program hands over that buffer (mt_session_create_in): on a device without
 * a heap it can be a static array. Translating then allocates nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mt/mt.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: translate_c MODEL.mtm SENTENCE\n");
    return 2;
  }
  int status = 1;
  mt_model* model = NULL;
  mt_session* session = NULL;
  void* memory = NULL;
  if (mt_model_load(argv[1], &model) != MT_OK) goto done;

  mt_session_options options;
  mt_session_options_init(&options); /* always first: the struct grows between versions */
  options.max_batch_size = 1;
  options.max_beam_size = 4;
  size_t bytes = 0;
  if (mt_session_memory_size(model, &options, &bytes) != MT_OK) goto done;
  memory = aligned_alloc(64, (bytes + 63) / 64 * 64); /* 64-byte aligned */
  if (memory == NULL) {
    fprintf(stderr, "translate_c: no memory for the session's %zu bytes\n", bytes);
    goto done;
  }
  if (mt_session_create_in(model, &options, memory, bytes, &session) != MT_OK) goto done;

  mt_translate_options translate;
  mt_translate_options_init(&translate);
  translate.beam_size = 4;
  const char* texts[1] = {argv[2]};
  const size_t lengths[1] = {strlen(argv[2])};
  if (mt_translate_text(session, texts, lengths, 1, &translate) != MT_OK) goto done;
  const char* text = NULL;
  size_t length = 0;
  float score = 0.0f;
  if (mt_result_text(session, 0, 0, &text, &length, &score) != MT_OK) goto done;
  printf("%.*s\n", (int)length, text);
  status = 0;

done:
  if (status != 0 && mt_last_error()[0] != '\0') fprintf(stderr, "translate_c: %s\n", mt_last_error());
  mt_session_free(session); /* before its memory */
  free(memory);
  mt_model_free(model);
  return status;
}
