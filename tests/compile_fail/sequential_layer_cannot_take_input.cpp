// Conv2D after a Dense: the Dense outputs (batch, 16), Conv2D needs (batch, height, width, channels).
// The error names the layer's position (2), the layer and the shape it got.
// expect: Sequential: the layer at position LayerPosition cannot take the previous layer's output.
// expect: layer_cannot_take_its_input<2, mixprec::Conv2D<4, 3, 3>, mixprec::batch_of<16>, mixprec::float16>
#include <mixprec/layers.hpp>
#include <mixprec/models/sequential.hpp>

using namespace mixprec;
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using model = Sequential<policies::mixed_float16, Input<8, 8, 1>, Conv2D<4, 3, 3>, Flatten<>, Dense<16>>;
#else
using model = Sequential<policies::mixed_float16, Input<8>, Dense<16>, Conv2D<4, 3, 3>>;
#endif
static_assert(model::layer_count > 0);
