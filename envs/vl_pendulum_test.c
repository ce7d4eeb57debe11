/*  vl_pendulum_test: Pendulum-v1's dynamics, cost, clipping, resets and time
    limit, against a reference step written from the equations and against
    a trajectory printed by Gymnasium itself. */
#include "vl_env.h"
#include "vl_pendulum.h"

#include <math.h>
#include <string.h>

#include "../tests/vl_test.h"

/* Printed by envs/vl_pendulum_reference.py (Gymnasium's own Pendulum-v1):
   200 steps from theta = 2.5, theta_dot = -0.7 under these torques. */
// gymnasium 1.4.0, numpy 2.4.6
// start (2.5, -0.7); actions: see action() in vl_pendulum_reference.py
static const float s_gym_actions[200] = {
    0.00000000e+00f,  1.08484626e+00f,  2.02286363e+00f,  2.68709612e+00f,  2.98764253e+00f,
    2.88382554e+00f,  2.38969636e+00f,  1.57213306e+00f,  5.41788816e-01f,  -5.61883986e-01f,
    5.00000000e+00f,  -7.50000000e+00f, -2.88939285e+00f, -2.98571944e+00f, -2.67794299e+00f,
    -2.00771952e+00f, -1.06576073e+00f, 2.04439200e-02f,  1.10388148e+00f,  2.03791404e+00f,
    2.69612432e+00f,  2.98942685e+00f,  2.87812448e+00f,  2.37728143e+00f,  1.55468464e+00f,
    5.21668434e-01f,  -5.81953108e-01f, -1.60680997e+00f, -2.41419268e+00f, -2.89482570e+00f,
    -2.98365784e+00f, -2.66866565e+00f, -1.99248219e+00f, -1.04662561e+00f, 4.08868901e-02f,
    1.12286556e+00f,  2.05286956e+00f,  2.70502734e+00f,  2.99107242e+00f,  2.87228966e+00f,
    2.36475611e+00f,  1.53716397e+00f,  5.01523912e-01f,  -6.01995170e-01f, -1.62403691e+00f,
    -2.42627311e+00f, -2.90012431e+00f, -2.98145747e+00f, -2.65926433e+00f, -1.97715223e+00f,
    -1.02744186e+00f, 6.13279641e-02f,  1.14179730e+00f,  2.06772971e+00f,  2.71380472e+00f,
    2.99257898e+00f,  2.86632156e+00f,  2.35212111e+00f,  1.51957202e+00f,  4.81356025e-01f,
    -6.22009277e-01f, -1.64118850e+00f, -2.43824053e+00f, -2.90528822e+00f, -2.97911882e+00f,
    -2.64973950e+00f, -1.96173048e+00f, -1.00821042e+00f, 8.17661881e-02f,  1.16067612e+00f,
    2.08249402e+00f,  2.72245598e+00f,  2.99394655e+00f,  2.86022019e+00f,  2.33937669e+00f,
    1.50190949e+00f,  4.61165786e-01f,  -6.41994476e-01f, -1.65826380e+00f, -2.45009494e+00f,
    -2.91031718e+00f, -2.97664165e+00f, -2.64009166e+00f, -1.94621766e+00f, -9.88932192e-01f,
    1.02200612e-01f,  1.17950106e+00f,  2.09716153e+00f,  2.73098111e+00f,  2.99517512e+00f,
    2.85398626e+00f,  2.32652378e+00f,  1.48417711e+00f,  4.40954179e-01f,  -6.61949873e-01f,
    -1.67526209e+00f, -2.46183562e+00f, -2.91521096e+00f, -2.97402644e+00f, -2.63032126e+00f,
    -1.93061435e+00f, -9.69608009e-01f, 1.22630291e-01f,  1.19827116e+00f,  2.11173153e+00f,
    2.73937917e+00f,  2.99626446e+00f,  2.84761953e+00f,  2.31356263e+00f,  1.46637595e+00f,
    4.20722038e-01f,  -6.81874573e-01f, -1.69218266e+00f, -2.47346187e+00f, -2.91996932e+00f,
    -2.97127295e+00f, -2.62042856e+00f, -1.91492152e+00f, -9.50238824e-01f, 1.43054277e-01f,
    2.00000000e+00f,  -2.00000000e+00f, 2.74765015e+00f,  2.99721479e+00f,  2.84112072e+00f,
    2.30049419e+00f,  1.44850659e+00f,  4.00470406e-01f,  -7.01767564e-01f, -1.70902455e+00f,
    -2.48497319e+00f, -2.92459226e+00f, -2.96838140e+00f, -2.61041427e+00f, -1.89913964e+00f,
    -9.30825472e-01f, 1.63471624e-01f,  1.23564363e+00f,  2.14057708e+00f,  2.75579333e+00f,
    2.99802589e+00f,  2.83448982e+00f,  2.28731894e+00f,  1.43057001e+00f,  3.80200148e-01f,
    -7.21628010e-01f, -1.72578716e+00f, -2.49636912e+00f, -2.92907929e+00f, -2.96535230e+00f,
    1.00000000e+06f,  -1.00000000e+06f, -9.11368906e-01f, 1.83881372e-01f,  1.25424421e+00f,
    2.15485096e+00f,  2.76380873e+00f,  2.99869800e+00f,  2.82772732e+00f,  2.27403736e+00f,
    1.41256690e+00f,  3.59912246e-01f,  -7.41454899e-01f, -1.74246955e+00f, -2.50764918e+00f,
    -2.93343019e+00f, -2.96218538e+00f, -2.59002233e+00f, -1.86731219e+00f, -8.91870022e-01f,
    2.04282582e-01f,  1.27278650e+00f,  2.16902471e+00f,  2.77169561e+00f,  2.99923062e+00f,
    2.82083368e+00f,  2.26065016e+00f,  1.39449835e+00f,  3.39607626e-01f,  -7.61247337e-01f,
    -1.75907111e+00f, -2.51881289e+00f, -2.93764496e+00f, -2.95888066e+00f, -2.57964587e+00f,
    -1.85126805e+00f, -8.72329712e-01f, 2.24674314e-01f,  1.29126966e+00f,  2.18309784e+00f,
    2.77945399e+00f,  2.99962401e+00f,  2.81380892e+00f,  2.24715805e+00f,  1.37636495e+00f,
    3.19287241e-01f,  -7.81004488e-01f, -1.77559090e+00f, -2.52985930e+00f, -2.94172335e+00f};
static const float s_gym_obs[200][3] = {{-7.93565452e-01f, 6.08484864e-01f, -2.51145899e-01f},
                                        {-8.04624975e-01f, 5.93783319e-01f, 3.67944717e-01f},
                                        {-8.36414099e-01f, 5.48098028e-01f, 1.11328220e+00f},
                                        {-8.82863700e-01f, 4.69629258e-01f, 1.82435572e+00f},
                                        {-9.34108794e-01f, 3.56988460e-01f, 2.47657776e+00f},
                                        {-9.77437913e-01f, 2.11222962e-01f, 3.04431915e+00f},
                                        {-9.99289870e-01f, 3.76802422e-02f, 3.50273633e+00f},
                                        {-9.88673508e-01f, -1.50082439e-01f, 3.76681638e+00f},
                                        {-9.43609357e-01f, -3.31061035e-01f, 3.73552299e+00f},
                                        {-8.73925745e-01f, -4.86059427e-01f, 3.40294456e+00f},
                                        {-7.81022429e-01f, -6.24503016e-01f, 3.33839989e+00f},
                                        {-6.94554269e-01f, -7.19440341e-01f, 2.57002258e+00f},
                                        {-6.29786253e-01f, -7.76768446e-01f, 1.73044240e+00f},
                                        {-5.96300542e-01f, -8.02761316e-01f, 8.47866118e-01f},
                                        {-5.98474026e-01f, -8.01142216e-01f, -5.42048514e-02f},
                                        {-6.36034250e-01f, -7.71660864e-01f, -9.55061495e-01f},
                                        {-6.99023902e-01f, -7.15098262e-01f, -1.69367123e+00f},
                                        {-7.74154365e-01f, -6.32996857e-01f, -2.22692847e+00f},
                                        {-8.47990751e-01f, -5.30011058e-01f, -2.53609371e+00f},
                                        {-9.10239816e-01f, -4.14081484e-01f, -2.63360214e+00f},
                                        {-9.56881940e-01f, -2.90477037e-01f, -2.64416313e+00f},
                                        {-9.86150265e-01f, -1.65854335e-01f, -2.56202102e+00f},
                                        {-9.98881400e-01f, -4.72860523e-02f, -2.38641167e+00f},
                                        {-9.98272359e-01f, 5.87562658e-02f, -2.12187624e+00f},
                                        {-9.88618076e-01f, 1.50447041e-01f, -1.84460640e+00f},
                                        {-9.72817004e-01f, 2.31575102e-01f, -1.65352082e+00f},
                                        {-9.51705217e-01f, 3.07013243e-01f, -1.56713247e+00f},
                                        {-9.24548268e-01f, 3.81064892e-01f, -1.57789409e+00f},
                                        {-8.91317904e-01f, 4.53378886e-01f, -1.59209538e+00f},
                                        {-8.53487074e-01f, 5.21113992e-01f, -1.55206120e+00f},
                                        {-8.13170791e-01f, 5.82025170e-01f, -1.46122575e+00f},
                                        {-7.72865236e-01f, 6.34570181e-01f, -1.32470691e+00f},
                                        {-7.35199869e-01f, 6.77850425e-01f, -1.14765155e+00f},
                                        {-7.07637191e-01f, 7.06575930e-01f, -7.96257555e-01f},
                                        {-6.98385298e-01f, 7.15721965e-01f, -2.60192603e-01f},
                                        {-7.14136958e-01f, 7.00006008e-01f, 4.45028722e-01f},
                                        {-7.57119238e-01f, 6.53276682e-01f, 1.27003324e+00f},
                                        {-8.20274949e-01f, 5.71969390e-01f, 2.05999088e+00f},
                                        {-8.91814351e-01f, 4.52401489e-01f, 2.78896785e+00f},
                                        {-9.55913007e-01f, 2.93649942e-01f, 3.42826891e+00f},
                                        {-9.94942307e-01f, 1.00447878e-01f, 3.94850636e+00f},
                                        {-9.93723035e-01f, -1.11868620e-01f, 4.25441694e+00f},
                                        {-9.47845161e-01f, -3.18731099e-01f, 4.24574423e+00f},
                                        {-8.67714643e-01f, -4.97062624e-01f, 3.91639638e+00f},
                                        {-7.74286151e-01f, -6.32835627e-01f, 3.29999399e+00f},
                                        {-6.88426912e-01f, -7.25305736e-01f, 2.52536726e+00f},
                                        {-6.25091374e-01f, -7.80551612e-01f, 1.68138790e+00f},
                                        {-5.93539655e-01f, -8.04804742e-01f, 7.95974195e-01f},
                                        {-5.97862065e-01f, -8.01599026e-01f, -1.07629359e-01f},
                                        {-6.37386262e-01f, -7.70544469e-01f, -1.00540149e+00f},
                                        {-7.01836765e-01f, -7.12337852e-01f, -1.73742604e+00f},
                                        {-7.77761579e-01f, -6.28559411e-01f, -2.26248026e+00f},
                                        {-8.51703823e-01f, -5.24023414e-01f, -2.56263018e+00f},
                                        {-9.13583398e-01f, -4.06651407e-01f, -2.65564775e+00f},
                                        {-9.59449410e-01f, -2.81880856e-01f, -2.66063643e+00f},
                                        {-9.87677097e-01f, -1.56505495e-01f, -2.57204700e+00f},
                                        {-9.99290168e-01f, -3.76713239e-02f, -2.38942599e+00f},
                                        {-9.97675002e-01f, 6.81508780e-02f, -2.11767960e+00f},
                                        {-9.87205744e-01f, 1.59451753e-01f, -1.83863068e+00f},
                                        {-9.70746160e-01f, 2.40108088e-01f, -1.64683843e+00f},
                                        {-9.49084282e-01f, 3.15022290e-01f, -1.56005871e+00f},
                                        {-9.21458244e-01f, 3.88477415e-01f, -1.56997025e+00f},
                                        {-8.87958467e-01f, 4.59923685e-01f, -1.57861221e+00f},
                                        {-8.50115001e-01f, 5.26597142e-01f, -1.53366947e+00f},
                                        {-8.10067654e-01f, 5.86336374e-01f, -1.43872166e+00f},
                                        {-7.70304859e-01f, 6.37675822e-01f, -1.29896939e+00f},
                                        {-7.33577013e-01f, 6.79606318e-01f, -1.11497200e+00f},
                                        {-7.07352340e-01f, 7.06861138e-01f, -7.56498814e-01f},
                                        {-6.99745417e-01f, 7.14392245e-01f, -2.14088067e-01f},
                                        {-7.17238665e-01f, 6.96827590e-01f, 4.95807558e-01f},
                                        {-7.61583388e-01f, 6.48066938e-01f, 1.31842828e+00f},
                                        {-8.25437486e-01f, 5.64493477e-01f, 2.10447836e+00f},
                                        {-8.96749675e-01f, 4.42538142e-01f, 2.82784867e+00f},
                                        {-9.59537983e-01f, 2.81579167e-01f, 3.45975208e+00f},
                                        {-9.96227205e-01f, 8.67833421e-02f, 3.97093654e+00f},
                                        {-9.92050767e-01f, -1.25838369e-01f, 4.26131058e+00f},
                                        {-9.43426967e-01f, -3.31580371e-01f, 4.23610640e+00f},
                                        {-8.61523092e-01f, -5.07718325e-01f, 3.89112210e+00f},
                                        {-7.67660379e-01f, -6.40856922e-01f, 3.26159382e+00f},
                                        {-6.82468593e-01f, -7.30914891e-01f, 2.48095107e+00f},
                                        {-6.20591283e-01f, -7.84134209e-01f, 1.63276494e+00f},
                                        {-5.90972066e-01f, -8.06692004e-01f, 7.44664311e-01f},
                                        {-5.97420812e-01f, -8.01927865e-01f, -1.60354719e-01f},
                                        {-6.38823211e-01f, -7.69353569e-01f, -1.05373335e+00f},
                                        {-7.04644561e-01f, -7.09560454e-01f, -1.77908826e+00f},
                                        {-7.81282902e-01f, -6.24177039e-01f, -2.29592848e+00f},
                                        {-8.55271935e-01f, -5.18179476e-01f, -2.58713627e+00f},
                                        {-9.16748762e-01f, -3.99464309e-01f, -2.67577076e+00f},
                                        {-9.61835325e-01f, -2.73628980e-01f, -2.67536902e+00f},
                                        {-9.89048123e-01f, -1.47593260e-01f, -2.58059072e+00f},
                                        {-9.99591887e-01f, -2.85662729e-02f, -2.39128566e+00f},
                                        {-9.97031927e-01f, 7.69890994e-02f, -2.11271048e+00f},
                                        {-9.85806823e-01f, 1.67883649e-01f, -1.83234203e+00f},
                                        {-9.68739808e-01f, 2.48079002e-01f, -1.64028609e+00f},
                                        {-9.46568370e-01f, 3.22503150e-01f, -1.55351937e+00f},
                                        {-9.18502688e-01f, 3.95414710e-01f, -1.56293130e+00f},
                                        {-8.84750545e-01f, 4.66064870e-01f, -1.56637025e+00f},
                                        {-8.46894264e-01f, 5.31761289e-01f, -1.51682162e+00f},
                                        {-8.07096303e-01f, 5.90419829e-01f, -1.41800070e+00f},
                                        {-7.67837048e-01f, 6.40645206e-01f, -1.27518582e+00f},
                                        {-7.31993556e-01f, 6.81311548e-01f, -1.08429408e+00f},
                                        {-7.07041502e-01f, 7.07172096e-01f, -7.18751609e-01f},
                                        {-7.01005816e-01f, 7.13155508e-01f, -1.69977993e-01f},
                                        {-7.20163822e-01f, 6.93804085e-01f, 5.44629335e-01f},
                                        {-7.65801966e-01f, 6.43076479e-01f, 1.36498237e+00f},
                                        {-8.30303490e-01f, 5.57311535e-01f, 2.14728975e+00f},
                                        {-9.01366889e-01f, 4.33056206e-01f, 2.86527348e+00f},
                                        {-9.62864518e-01f, 2.69984931e-01f, 3.49006557e+00f},
                                        {-9.97281730e-01f, 7.36828446e-02f, 3.99255419e+00f},
                                        {-9.90266323e-01f, -1.39185593e-01f, 4.26777267e+00f},
                                        {-9.39041853e-01f, -3.43802780e-01f, 4.22649193e+00f},
                                        {-8.55499566e-01f, -5.17803550e-01f, 3.86635852e+00f},
                                        {-7.61293650e-01f, -6.48407280e-01f, 3.22417855e+00f},
                                        {-6.76803827e-01f, -7.36163437e-01f, 2.43787313e+00f},
                                        {-6.16370142e-01f, -7.87456572e-01f, 1.58575058e+00f},
                                        {-5.88633001e-01f, -8.08400393e-01f, 6.95158124e-01f},
                                        {-5.97134411e-01f, -8.02141190e-01f, -2.11142182e-01f},
                                        {-6.40326500e-01f, -7.68102825e-01f, -1.09998631e+00f},
                                        {-7.07428455e-01f, -7.06784964e-01f, -1.81859922e+00f},
                                        {-7.84701645e-01f, -6.19873583e-01f, -2.32722974e+00f},
                                        {-8.55658293e-01f, -5.17541230e-01f, -2.49213505e+00f},
                                        {-9.26813304e-01f, -3.75522375e-01f, -3.18029094e+00f},
                                        {-9.74376619e-01f, -2.24922687e-01f, -3.16193271e+00f},
                                        {-9.97163832e-01f, -7.52612278e-02f, -3.03062463e+00f},
                                        {-9.97951329e-01f, 6.39773533e-02f, -2.78707051e+00f},
                                        {-9.82756376e-01f, 1.84905261e-01f, -2.43908763e+00f},
                                        {-9.58206117e-01f, 2.86078811e-01f, -2.08313274e+00f},
                                        {-9.28457797e-01f, 3.71437907e-01f, -1.80850303e+00f},
                                        {-8.95021558e-01f, 4.46022809e-01f, -1.63518977e+00f},
                                        {-8.57622266e-01f, 5.14280140e-01f, -1.55702627e+00f},
                                        {-8.17503333e-01f, 5.75923920e-01f, -1.47131622e+00f},
                                        {-7.77130783e-01f, 6.29339099e-01f, -1.33937323e+00f},
                                        {-7.39094675e-01f, 6.73601568e-01f, -1.16736889e+00f},
                                        {-7.05846190e-01f, 7.08365142e-01f, -9.62167799e-01f},
                                        {-6.80048466e-01f, 7.33167171e-01f, -7.15764880e-01f},
                                        {-6.68769956e-01f, 7.43469417e-01f, -3.05513322e-01f},
                                        {-6.78988159e-01f, 7.34149218e-01f, 2.76609480e-01f},
                                        {-7.15271115e-01f, 6.98847115e-01f, 1.01256788e+00f},
                                        {-7.76345611e-01f, 6.30307496e-01f, 1.83670330e+00f},
                                        {-8.51751328e-01f, 5.23946285e-01f, 2.60943389e+00f},
                                        {-9.26287651e-01f, 3.76817256e-01f, 3.30239367e+00f},
                                        {-9.81604040e-01f, 1.90928072e-01f, 3.88500643e+00f},
                                        {-9.99704719e-01f, -2.43002083e-02f, 4.32820272e+00f},
                                        {-9.68780994e-01f, -2.47918174e-01f, 4.52456284e+00f},
                                        {-8.91426265e-01f, -4.53165740e-01f, 4.39565420e+00f},
                                        {-7.85253882e-01f, -6.19173884e-01f, 3.94753575e+00f},
                                        {-6.75683677e-01f, -7.37191677e-01f, 3.22428727e+00f},
                                        {-5.83735704e-01f, -8.11943769e-01f, 2.37139344e+00f},
                                        {-5.22857904e-01f, -8.52419853e-01f, 1.46243572e+00f},
                                        {-5.00385702e-01f, -8.65802586e-01f, 5.23120880e-01f},
                                        {-4.92844433e-01f, -8.70117426e-01f, 1.73768893e-01f},
                                        {-5.26345432e-01f, -8.50270808e-01f, -7.78819203e-01f},
                                        {-5.90725839e-01f, -8.06872368e-01f, -1.55322766e+00f},
                                        {-6.73178017e-01f, -7.39480436e-01f, -2.13079977e+00f},
                                        {-7.60031581e-01f, -6.49886131e-01f, -2.49727345e+00f},
                                        {-8.40169728e-01f, -5.42323530e-01f, -2.68468809e+00f},
                                        {-9.07447100e-01f, -4.20166373e-01f, -2.79143071e+00f},
                                        {-9.57294762e-01f, -2.89113700e-01f, -2.80655551e+00f},
                                        {-9.87680256e-01f, -1.56485528e-01f, -2.72339058e+00f},
                                        {-9.99547243e-01f, -3.00890561e-02f, -2.54075480e+00f},
                                        {-9.96176243e-01f, 8.73667076e-02f, -2.35143661e+00f},
                                        {-9.80250061e-01f, 1.97762161e-01f, -2.23192477e+00f},
                                        {-9.52694237e-01f, 3.03930432e-01f, -2.19482136e+00f},
                                        {-9.12996054e-01f, 4.07968372e-01f, -2.22824407e+00f},
                                        {-8.62128317e-01f, 5.06690025e-01f, -2.22226763e+00f},
                                        {-8.03018272e-01f, 5.95954359e-01f, -2.14225006e+00f},
                                        {-7.39669085e-01f, 6.72970772e-01f, -1.99528432e+00f},
                                        {-6.76537573e-01f, 7.36408114e-01f, -1.79055631e+00f},
                                        {-6.18736446e-01f, 7.85598636e-01f, -1.51834702e+00f},
                                        {-5.76130748e-01f, 8.17357540e-01f, -1.06292856e+00f},
                                        {-5.58870792e-01f, 8.29254746e-01f, -4.19268012e-01f},
                                        {-5.75080931e-01f, 8.18096519e-01f, 3.93590987e-01f},
                                        {-6.27284288e-01f, 7.78790355e-01f, 1.30716336e+00f},
                                        {-7.08678961e-01f, 7.05531120e-01f, 2.19125628e+00f},
                                        {-8.06757748e-01f, 5.90882361e-01f, 3.02040458e+00f},
                                        {-9.03051913e-01f, 4.29531366e-01f, 3.76356626e+00f},
                                        {-9.74863648e-01f, 2.22802252e-01f, 4.38571501e+00f},
                                        {-9.99910057e-01f, -1.34111261e-02f, 4.76199102e+00f},
                                        {-9.68026698e-01f, -2.50847101e-01f, 4.80287409e+00f},
                                        {-8.87648463e-01f, -4.60521668e-01f, 4.50055170e+00f},
                                        {-7.81863034e-01f, -6.23450220e-01f, 3.89129972e+00f},
                                        {-6.75367534e-01f, -7.37481356e-01f, 3.12371206e+00f},
                                        {-5.87473214e-01f, -8.09243619e-01f, 2.27060103e+00f},
                                        {-5.30973911e-01f, -8.47388148e-01f, 1.36366832e+00f},
                                        {-5.12714148e-01f, -8.58559370e-01f, 4.28127199e-01f},
                                        {-5.33740163e-01f, -8.45648527e-01f, -4.93482560e-01f},
                                        {-5.85863888e-01f, -8.10409486e-01f, -1.25856841e+00f},
                                        {-6.57562912e-01f, -7.53399670e-01f, -1.83267438e+00f},
                                        {-7.36432016e-01f, -6.76511526e-01f, -2.20403361e+00f},
                                        {-8.12455714e-01f, -5.83022892e-01f, -2.41141725e+00f},
                                        {-8.79963875e-01f, -4.75040615e-01f, -2.54868436e+00f},
                                        {-9.34208691e-01f, -3.56726915e-01f, -2.60496497e+00f},
                                        {-9.72249091e-01f, -2.33948037e-01f, -2.57251000e+00f},
                                        {-9.93538797e-01f, -1.13492809e-01f, -2.44797111e+00f},
                                        {-9.99996662e-01f, 2.59391777e-03f, -2.32663608e+00f},
                                        {-9.93229270e-01f, 1.16170891e-01f, -2.27679753e+00f},
                                        {-9.73260224e-01f, 2.29705215e-01f, -2.30681992e+00f},
                                        {-9.38747525e-01f, 3.44605744e-01f, -2.40087962e+00f},
                                        {-8.89777005e-01f, 4.56395566e-01f, -2.44242549e+00f},
                                        {-8.28738570e-01f, 5.59635997e-01f, -2.40012860e+00f}};
static const double s_gym_rewards[200] = {
    -6.2990000000000004, -6.1948555300691961, -6.296772142339182,  -6.6892427375836343,
    -7.3737605484129229, -8.3265776390321307, -9.5084620966578353, -10.863604615724151,
    -10.364912163231832, -9.2590693605176106, -8.100051991105202,  -7.2050621263758714,
    -6.1335352250955717, -5.3752820819670362, -4.9585781040444186, -4.8989691144489802,
    -5.2006027302857207, -5.7850707511484689, -6.5299320772872811, -7.3189580023760641,
    -8.0669603835427317, -8.8078134893161213, -9.5108320027982689, -10.148120299551172,
    -9.9563243771562284, -9.2840515503088028, -8.7296119020194443, -8.2544662777958884,
    -7.8190219899306532, -7.3919318200553308, -6.9708049141683128, -6.5698118352677177,
    -6.2022598006888154, -5.8772537798004842, -5.6185936410742512, -5.5020634909383244,
    -5.6226446844172333, -6.0686841146468957, -6.8428643440426695, -7.9221466534846661,
    -9.2650780647367146, -10.808962621743847, -10.988063731288619, -9.7396247256792279,
    -8.4080990308127035, -7.1268117400293916, -6.0711805869794251, -5.3314242346517098,
    -4.934879753209767,  -4.8963644425430548, -5.2183201915088642, -5.818584672930128,
    -6.5741027596387243, -7.3689345668019159, -8.122924179580691,  -8.8677136037058766,
    -9.5724313026067183, -10.20920797911768,  -9.8964851914506689, -9.2273760843121391,
    -8.6764650313716327, -8.2047477043047099, -7.7724122810167335, -7.3484109046006578,
    -6.9317828125213374, -6.5365381244033527, -6.1756458716385811, -5.8583249965500377,
    -5.6105251366333775, -5.5088837770991725, -5.6484587101802104, -6.1145974047660943,
    -6.9074936518333612, -8.0030502247469446, -9.3585994875489309, -10.910281567906987,
    -10.908845817831883, -9.6551260259269878, -8.3240184160357416, -7.0506109744223338,
    -6.0108758519202707, -5.2895041708917265, -4.9129242231480186, -4.895222244806507,
    -5.2366409600268709, -5.8518100507159492, -6.6171496593158601, -7.4170698991174504,
    -8.1764801749613305, -8.9247115555675318, -9.6307369095226001, -10.266733774048481,
    -9.8398848354873696, -9.1741371792898683, -8.6267710643805593, -8.1583550522578232,
    -7.7289016732345122, -7.3076978542019377, -6.8951905969855698, -6.5052414675767709,
    -6.1504978873663259, -5.8403635506608786, -5.6028927446191581, -5.5155661079442577,
    -5.6735020249334287, -6.158976303944935,  -6.9698719450455995, -8.0810634263559606,
    -9.4487145487216608, -11.007859723394077, -10.83329141778032,  -9.5743990757930924,
    -8.2437616691359814, -6.9781268575345381, -5.9538839065857569, -5.2503326186949364,
    -4.893042384458953,  -4.8954091080386526, -5.255385137015967,  -5.8845478371281139,
    -6.6613834115583508, -7.3726918271113409, -8.6144468157742242, -9.4994267532664924,
    -10.324420208464691, -10.252223093738815, -9.3326860334812523, -8.5649319002413975,
    -7.950877347896804,  -7.4488248031710986, -7.0138431019072645, -6.6105472591138552,
    -6.2393723456296151, -5.9123854942078795, -5.6394454058701928, -5.4281205280797593,
    -5.3147789812869579, -5.3785006266630306, -5.7130453480550978, -6.3911936632279538,
    -7.3936108448902278, -8.685899142402258,  -10.212790079887144, -11.592877566803754,
    -10.405550465251272, -9.0684309486698105, -7.6814753226945722, -6.3921288086359818,
    -5.3805060986666868, -4.7164982767897135, -4.4197223770162948, -4.359050073176439,
    -4.5775069602744285, -5.093412472372262,  -5.7884445320268298, -6.5527630075906398,
    -7.321394891843604,  -8.116277580025395,  -8.9044413916528473, -9.6526950188939971,
    -10.328965233225748, -9.8806698406520699, -9.157111821961827,  -8.5093864692691135,
    -7.9063341354114058, -7.3112604383972357, -6.7286285668378811, -6.1783264457298035,
    -5.6779839534855245, -5.2396622928719792, -4.8863011434645687, -4.7013147401597104,
    -4.7871608586462582, -5.2322278240968014, -6.0463068719455997, -7.2135763018196446,
    -8.6975907249511302, -10.433726608117123, -12.053288532589908, -10.648099554414909,
    -9.1202122389971336, -7.6114413578666733, -6.3263005619892523, -5.3539730255017535,
    -4.7291844889995618, -4.4702256131250593, -4.5782737537684195, -4.9841252367210869,
    -5.5742002314053574, -6.2429498761954036, -6.9316012153560669, -7.6579780022659154,
    -8.3933730343732158, -9.1074566604952416, -9.7690551840476143, -10.394738492191141,
    -9.6705767642782732, -9.002334546741201,  -8.363260612718566,  -7.7169146097169703};
// first terminated at step -1, first truncated at step 200

#define S_PI 3.14159265358979323846

/* The reference step, written from the physics rather than from Gymnasium's
   source: the torque clipped with fmin/fmax, the angle's distance from
   upright taken with atan2, the pendulum's equation
   theta'' = 3 g / (2 l) sin theta + 3 u / (m l^2) integrated semi-implicitly
   (the new velocity moves the angle). Returns the reward. */
static double s_reference_step(double s[2], double u)
{
    double g = 10.0, m = 1.0, l = 1.0, dt = 0.05;
    u = fmin(2.0, fmax(-2.0, u));
    double off = atan2(sin(s[0]), cos(s[0])); // in (-pi, pi]
    double reward = -(off * off + s[1] * s[1] / 10 + u * u / 1000);
    double acc = 1.5 * g / l * sin(s[0]) + 3 * u / (m * l * l);
    s[1] = fmin(8.0, fmax(-8.0, s[1] + dt * acc));
    s[0] += dt * s[1];
    return reward;
}

/* Steps a new env once from s with torque u; checks state, observation and
   reward against the reference step, and that the episode goes on. */
static int s_check_step(double th, double thdot, float u)
{
    void *env = vl_pendulum_env.create(NULL);
    double s[2] = {th, thdot}, ref[2] = {th, thdot}, got[2];
    float obs[3];
    int term = -1, trunc = -1, ok = env != NULL;
    if (!ok)
        return 0;
    vl_pendulum_set_state(env, s);
    float reward = vl_pendulum_env.step(env, &u, obs, &term, &trunc);
    vl_pendulum_get_state(env, got);
    double want = s_reference_step(ref, u);
    ok &= fabs(got[0] - ref[0]) <= 1e-9 && fabs(got[1] - ref[1]) <= 1e-9;
    ok &= fabs(reward - want) <= 1e-6 * fmax(1.0, fabs(want));
    ok &= obs[0] == (float)cos(got[0]) && obs[1] == (float)sin(got[0]) && obs[2] == (float)got[1];
    ok &= term == 0 && trunc == 0;
    vl_pendulum_env.destroy(env);
    if (!ok)
        fprintf(stderr,
                "     step from (%g, %g) with %g: got (%.17g, %.17g) reward %.9g, "
                "reference (%.17g, %.17g) reward %.9g\n",
                th, thdot, u, got[0], got[1], reward, ref[0], ref[1], want);
    return ok;
}

/* States around the circle, fast and slow, torques inside, on and beyond
   the bounds: an angle past pi wraps in the cost, the speed clips at 8. */
static void test_step_matches_reference(void)
{
    double th[] = {0, 0.3, -1.2, S_PI - 0.01, -S_PI + 0.01, 4.0, -7.5, 13.0, 100.0};
    double thdot[] = {0, 0.5, -3.0, 7.9, -7.99};
    float u[] = {0, 1.25f, -0.5f, 2.0f, -2.0f, 2.5f, -9.0f, 1e30f};
    for (size_t i = 0; i < sizeof th / sizeof th[0]; i++)
        for (size_t j = 0; j < sizeof thdot / sizeof thdot[0]; j++)
            for (size_t k = 0; k < sizeof u / sizeof u[0]; k++)
                VL_CHECK(s_check_step(th[i], thdot[j], u[k]));
}

/* Values worked by hand. Upright and still with no torque: cost 0, no
   motion. Hanging down (theta = pi) still: cost pi^2. From theta = pi/2,
   still, torque 2: theta_dot = (15 + 6) * 0.05 = 1.05, theta = pi/2 +
   0.0525, cost (pi/2)^2 + 0.004. */
static void test_step_by_hand(void)
{
    void *env = vl_pendulum_env.create(NULL);
    double up[2] = {0, 0}, down[2] = {S_PI, 0}, side[2] = {S_PI / 2, 0}, got[2];
    float obs[3], zero = 0, two = 2, over = 3.5f, r;
    int term, trunc;
    VL_CHECK(env);
    vl_pendulum_set_state(env, up);
    r = vl_pendulum_env.step(env, &zero, obs, &term, &trunc);
    vl_pendulum_get_state(env, got);
    VL_CHECK(r == 0.0f && got[0] == 0 && got[1] == 0);
    VL_CHECK(obs[0] == 1.0f && obs[1] == 0.0f && obs[2] == 0.0f);
    vl_pendulum_set_state(env, down);
    r = vl_pendulum_env.step(env, &zero, obs, &term, &trunc);
    VL_CHECK_NEAR(r, -S_PI * S_PI, 1e-5);
    vl_pendulum_set_state(env, side);
    r = vl_pendulum_env.step(env, &two, obs, &term, &trunc);
    vl_pendulum_get_state(env, got);
    VL_CHECK_NEAR(r, -(S_PI * S_PI / 4 + 0.004), 1e-6);
    VL_CHECK_NEAR(got[1], 1.05, 1e-12);
    VL_CHECK_NEAR(got[0], S_PI / 2 + 0.0525, 1e-12);
    vl_pendulum_set_state(env, side); // 3.5 is clipped to 2: the same step
    float r_over = vl_pendulum_env.step(env, &over, obs, &term, &trunc);
    double got_over[2];
    vl_pendulum_get_state(env, got_over);
    vl_pendulum_env.destroy(env);
    VL_CHECK(r_over == r && got_over[0] == got[0] && got_over[1] == got[1]);
}

/* The speed clips at 8 rad/s either way, and the observation stays in the
   declared [-8, 8]. */
static void test_speed_clipped(void)
{
    void *env = vl_pendulum_env.create(NULL);
    double fast[2] = {S_PI / 2, 7.9}, slow[2] = {-S_PI / 2, -7.9}, got[2];
    float obs[3], push = 2, pull = -2;
    int term, trunc;
    VL_CHECK(env);
    vl_pendulum_set_state(env, fast);
    vl_pendulum_env.step(env, &push, obs, &term, &trunc);
    vl_pendulum_get_state(env, got);
    VL_CHECK(got[1] == 8.0 && got[0] == S_PI / 2 + 0.4 && obs[2] == 8.0f);
    vl_pendulum_set_state(env, slow);
    vl_pendulum_env.step(env, &pull, obs, &term, &trunc);
    vl_pendulum_get_state(env, got);
    vl_pendulum_env.destroy(env);
    VL_CHECK(got[1] == -8.0 && obs[2] == -8.0f);
}

/* A torque that is not a number (the caller should never pass one) leaves
   the state and the reward finite. */
static void test_nan_torque_stays_finite(void)
{
    void *env = vl_pendulum_env.create(NULL);
    double s[2] = {1, 1}, got[2];
    float obs[3], u = NAN;
    int term, trunc;
    VL_CHECK(env);
    vl_pendulum_set_state(env, s);
    float r = vl_pendulum_env.step(env, &u, obs, &term, &trunc);
    vl_pendulum_get_state(env, got);
    vl_pendulum_env.destroy(env);
    VL_CHECK(isfinite(r) && isfinite(got[0]) && isfinite(got[1]));
    VL_CHECK(isfinite(obs[0]) && isfinite(obs[1]) && isfinite(obs[2]));
}

/* Plays Gymnasium's 200 steps; returns the number of steps whose
   observation equals Gymnasium's bit for bit, -1 when one differs by more
   than tol or the episode's flags are not Gymnasium's (never terminated,
   truncated on the 200th step alone). Sets *max_reward_err. */
static int s_play_gymnasium(double tol, double *max_reward_err)
{
    void *env = vl_pendulum_env.create(NULL);
    double start[2] = {2.5, -0.7};
    float obs[3];
    int term, trunc, exact = 0, ok = env != NULL;
    *max_reward_err = 0;
    if (!ok)
        return -1;
    vl_pendulum_env.reset(env, obs);
    vl_pendulum_set_state(env, start);
    for (int t = 0; t < 200 && ok; t++) {
        float r = vl_pendulum_env.step(env, &s_gym_actions[t], obs, &term, &trunc);
        double err = fabs(r - s_gym_rewards[t]) / fmax(1.0, fabs(s_gym_rewards[t]));
        *max_reward_err = fmax(*max_reward_err, err);
        exact += memcmp(obs, s_gym_obs[t], sizeof obs) == 0;
        for (int i = 0; i < 3; i++)
            ok &= fabs(obs[i] - s_gym_obs[t][i]) <= tol;
        ok &= term == 0 && trunc == (t == 199);
        if (!ok)
            fprintf(stderr,
                    "     step %d: (%.9g, %.9g, %.9g) against Gymnasium's (%.9g, %.9g, "
                    "%.9g), flags %d %d\n",
                    t + 1, obs[0], obs[1], obs[2], s_gym_obs[t][0], s_gym_obs[t][1],
                    s_gym_obs[t][2], term, trunc);
    }
    vl_pendulum_env.destroy(env);
    return ok ? exact : -1;
}

/* Gymnasium's trajectory, torques beyond the bounds included: every
   observation equal to Gymnasium's bit for bit, every reward Gymnasium's
   float64 one rounded to float. Computing the torque terms in double, as
   NumPy 1 did, leaves 41 of the 200 observations a bit off: the check
   would catch it. */
static void test_trajectory_matches_gymnasium(void)
{
    double reward_err;
    int exact = s_play_gymnasium(1e-6, &reward_err);
    printf("     %d of 200 observations equal Gymnasium's bit for bit; rewards within %.3g "
           "(relative)\n",
           exact, reward_err);
    VL_CHECK(exact == 200);
    VL_CHECK(reward_err <= 6e-8);
}

/* Never terminated; truncated on the 200th step since the reset and not
   before, again after a reset in the middle of an episode. */
static void test_truncate_at_200(void)
{
    void *env = vl_pendulum_env.create(NULL);
    float obs[3], u = 0.5f;
    int term = 0, trunc = 0, first = 0;
    VL_CHECK(env);
    vl_pendulum_env.reset(env, obs);
    for (int t = 1; t <= 77; t++)
        vl_pendulum_env.step(env, &u, obs, &term, &trunc);
    vl_pendulum_env.reset(env, obs);
    for (int t = 1; t <= 200 && !first; t++) {
        vl_pendulum_env.step(env, &u, obs, &term, &trunc);
        VL_CHECK(term == 0);
        first = trunc ? t : 0;
    }
    vl_pendulum_env.destroy(env);
    VL_CHECK(first == 200);
}

/* Resets n times, checking theta in [-pi, pi) and theta_dot in [-1, 1) and
   the observation they make; keeps each state's extremes in lo and hi. */
static int s_resets(void *env, int n, double lo[2], double hi[2], float *last)
{
    double s[2];
    lo[0] = lo[1] = 10, hi[0] = hi[1] = -10;
    for (int k = 0; k < n; k++) {
        vl_pendulum_env.reset(env, last);
        vl_pendulum_get_state(env, s);
        if (!(s[0] >= -S_PI && s[0] < S_PI && s[1] >= -1 && s[1] < 1))
            return -1;
        if (last[0] != (float)cos(s[0]) || last[1] != (float)sin(s[0]) || last[2] != (float)s[1])
            return -1;
        for (int i = 0; i < 2; i++) {
            lo[i] = fmin(lo[i], s[i]);
            hi[i] = fmax(hi[i], s[i]);
        }
    }
    return 0;
}

static void test_reset_ranges_and_seeds(void)
{
    void *a = vl_pendulum_env.create(NULL), *b = vl_pendulum_env.create(NULL);
    double lo[2], hi[2], lo_b[2], hi_b[2];
    float oa[3], ob[3];
    int ok = a && b;
    if (ok) {
        vl_pendulum_env.seed(a, 7);
        vl_pendulum_env.seed(b, 7);
        ok = s_resets(a, 500, lo, hi, oa) == 0 && s_resets(b, 500, lo_b, hi_b, ob) == 0;
    }
    if (ok) {
        ok = memcmp(oa, ob, sizeof oa) == 0;
        vl_pendulum_env.seed(b, 8);
        vl_pendulum_env.reset(b, ob);
        vl_pendulum_env.seed(a, 7);
        vl_pendulum_env.reset(a, oa);
        ok &= memcmp(oa, ob, sizeof oa) != 0;
    }
    vl_pendulum_env.destroy(a);
    vl_pendulum_env.destroy(b);
    VL_CHECK(ok);
    // 500 draws cover both intervals
    VL_CHECK(lo[0] < -3.0 && hi[0] > 3.0 && lo[1] < -0.95 && hi[1] > 0.95);
}

/* The table: one f32 field of 3 in [-8, 8], a box of one torque in [-2, 2],
   solved at a mean return of -250. */
static void test_table(void)
{
    const vl_env_t *t = &vl_pendulum_env;
    VL_CHECK(t->abi_version == VL_ENV_ABI_VERSION && strcmp(t->name, "pendulum") == 0);
    VL_CHECK(t->summary && strstr(t->summary, "Pendulum-v1"));
    VL_CHECK(t->n_fields == 1 && t->fields[0].encoding == VL_ENV_F32);
    VL_CHECK(t->fields[0].ndim == 1 && t->fields[0].shape[0] == 3);
    VL_CHECK(t->fields[0].low == -8.0f && t->fields[0].high == 8.0f);
    VL_CHECK(t->action.kind == VL_ENV_BOX && t->action.dims == 1);
    VL_CHECK(t->action.low[0] == -2.0f && t->action.high[0] == 2.0f);
    VL_CHECK(t->has_solved_return == 1 && t->solved_return == -250.0f);
    VL_CHECK(t->create && t->step && !t->vec_create && !t->vec_step);
}

/* Found by name, its spec as volley reads it: a box of one torque, one
   f32 field of 3 in [-8, 8]. */
static void test_find(void)
{
    const vl_env_ops_t *ops = vl_env_find("pendulum");
    VL_CHECK(ops && ops->table == &vl_pendulum_env && !ops->vectorized && !ops->path);
    VL_CHECK(ops->obs_dim == 3 && ops->low[0] == -8.0f && ops->high[0] == 8.0f);
    VL_CHECK(ops->action.kind == VL_ENV_BOX && ops->action.dims == 1);
    VL_CHECK(ops->action.low[0] == -2.0f && ops->action.high[0] == 2.0f);
    VL_CHECK(ops->has_solved_return && ops->solved_return == -250.0f);
}

/* Two pendulums stepped as an actor steps them, torques beyond the bounds
   included: every observation passes volley's checks, and both episodes
   are truncated together on step 200, never terminated. */
static void test_steps_through_envs(void)
{
    const vl_env_ops_t *ops = vl_env_find("pendulum");
    uint64_t seeds[2] = {1, 2};
    float obs[2][3], fin[2][3], rewards[2], actions[2];
    uint8_t term[2], trunc[2];
    int ok = 1, truncations = 0;
    VL_CHECK(ops);
    vl_envs_t *envs = vl_envs_new(ops, 2, NULL, seeds, obs[0]);
    VL_CHECK(envs);
    for (int t = 1; t <= 250 && ok; t++) {
        actions[0] = (float)(3 * sin(0.1 * t)), actions[1] = t % 2 ? 2.0f : -2.0f;
        ok = vl_envs_step(envs, actions, obs[0], rewards, term, trunc, fin[0]) == 0;
        ok &= !term[0] && !term[1] && trunc[0] == (t == 200) && trunc[1] == (t == 200);
        ok &= rewards[0] <= 0 && rewards[0] >= -17.0f && rewards[1] <= 0;
        truncations += trunc[0] + trunc[1];
    }
    vl_envs_destroy(&envs);
    VL_CHECK(ok && truncations == 2);
}

static void test_destroy_null(void)
{
    vl_pendulum_env.destroy(NULL);
    VL_CHECK(1);
}

int main(void)
{
    VL_RUN(test_step_matches_reference);
    VL_RUN(test_step_by_hand);
    VL_RUN(test_speed_clipped);
    VL_RUN(test_nan_torque_stays_finite);
    VL_RUN(test_trajectory_matches_gymnasium);
    VL_RUN(test_truncate_at_200);
    VL_RUN(test_reset_ranges_and_seeds);
    VL_RUN(test_table);
    VL_RUN(test_find);
    VL_RUN(test_steps_through_envs);
    VL_RUN(test_destroy_null);
    return VL_DONE();
}
