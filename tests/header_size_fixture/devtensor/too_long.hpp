#pragma once
/// @file too_long.hpp
/// @brief A fixture for headers.size_caught: 501 lines of code, and many comments that do not count.

inline constexpr int value_0 = 0;  // one line of code
inline constexpr int value_1 = 1;  // one line of code
inline constexpr int value_2 = 2;  // one line of code
inline constexpr int value_3 = 3;  // one line of code
inline constexpr int value_4 = 4;  // one line of code
inline constexpr int value_5 = 5;  // one line of code
inline constexpr int value_6 = 6;  // one line of code
inline constexpr int value_7 = 7;  // one line of code
inline constexpr int value_8 = 8;  // one line of code
inline constexpr int value_9 = 9;  // one line of code
inline constexpr int value_10 = 10;  // one line of code
inline constexpr int value_11 = 11;  // one line of code
inline constexpr int value_12 = 12;  // one line of code
inline constexpr int value_13 = 13;  // one line of code
inline constexpr int value_14 = 14;  // one line of code
inline constexpr int value_15 = 15;  // one line of code
inline constexpr int value_16 = 16;  // one line of code
inline constexpr int value_17 = 17;  // one line of code
inline constexpr int value_18 = 18;  // one line of code
inline constexpr int value_19 = 19;  // one line of code
inline constexpr int value_20 = 20;  // one line of code
inline constexpr int value_21 = 21;  // one line of code
inline constexpr int value_22 = 22;  // one line of code
inline constexpr int value_23 = 23;  // one line of code
inline constexpr int value_24 = 24;  // one line of code
inline constexpr int value_25 = 25;  // one line of code
inline constexpr int value_26 = 26;  // one line of code
inline constexpr int value_27 = 27;  // one line of code
inline constexpr int value_28 = 28;  // one line of code
inline constexpr int value_29 = 29;  // one line of code
inline constexpr int value_30 = 30;  // one line of code
inline constexpr int value_31 = 31;  // one line of code
inline constexpr int value_32 = 32;  // one line of code
inline constexpr int value_33 = 33;  // one line of code
inline constexpr int value_34 = 34;  // one line of code
inline constexpr int value_35 = 35;  // one line of code
inline constexpr int value_36 = 36;  // one line of code
inline constexpr int value_37 = 37;  // one line of code
inline constexpr int value_38 = 38;  // one line of code
inline constexpr int value_39 = 39;  // one line of code
inline constexpr int value_40 = 40;  // one line of code
inline constexpr int value_41 = 41;  // one line of code
inline constexpr int value_42 = 42;  // one line of code
inline constexpr int value_43 = 43;  // one line of code
inline constexpr int value_44 = 44;  // one line of code
inline constexpr int value_45 = 45;  // one line of code
inline constexpr int value_46 = 46;  // one line of code
inline constexpr int value_47 = 47;  // one line of code
inline constexpr int value_48 = 48;  // one line of code
inline constexpr int value_49 = 49;  // one line of code
inline constexpr int value_50 = 50;  // one line of code
inline constexpr int value_51 = 51;  // one line of code
inline constexpr int value_52 = 52;  // one line of code
inline constexpr int value_53 = 53;  // one line of code
inline constexpr int value_54 = 54;  // one line of code
inline constexpr int value_55 = 55;  // one line of code
inline constexpr int value_56 = 56;  // one line of code
inline constexpr int value_57 = 57;  // one line of code
inline constexpr int value_58 = 58;  // one line of code
inline constexpr int value_59 = 59;  // one line of code
inline constexpr int value_60 = 60;  // one line of code
inline constexpr int value_61 = 61;  // one line of code
inline constexpr int value_62 = 62;  // one line of code
inline constexpr int value_63 = 63;  // one line of code
inline constexpr int value_64 = 64;  // one line of code
inline constexpr int value_65 = 65;  // one line of code
inline constexpr int value_66 = 66;  // one line of code
inline constexpr int value_67 = 67;  // one line of code
inline constexpr int value_68 = 68;  // one line of code
inline constexpr int value_69 = 69;  // one line of code
inline constexpr int value_70 = 70;  // one line of code
inline constexpr int value_71 = 71;  // one line of code
inline constexpr int value_72 = 72;  // one line of code
inline constexpr int value_73 = 73;  // one line of code
inline constexpr int value_74 = 74;  // one line of code
inline constexpr int value_75 = 75;  // one line of code
inline constexpr int value_76 = 76;  // one line of code
inline constexpr int value_77 = 77;  // one line of code
inline constexpr int value_78 = 78;  // one line of code
inline constexpr int value_79 = 79;  // one line of code
inline constexpr int value_80 = 80;  // one line of code
inline constexpr int value_81 = 81;  // one line of code
inline constexpr int value_82 = 82;  // one line of code
inline constexpr int value_83 = 83;  // one line of code
inline constexpr int value_84 = 84;  // one line of code
inline constexpr int value_85 = 85;  // one line of code
inline constexpr int value_86 = 86;  // one line of code
inline constexpr int value_87 = 87;  // one line of code
inline constexpr int value_88 = 88;  // one line of code
inline constexpr int value_89 = 89;  // one line of code
inline constexpr int value_90 = 90;  // one line of code
inline constexpr int value_91 = 91;  // one line of code
inline constexpr int value_92 = 92;  // one line of code
inline constexpr int value_93 = 93;  // one line of code
inline constexpr int value_94 = 94;  // one line of code
inline constexpr int value_95 = 95;  // one line of code
inline constexpr int value_96 = 96;  // one line of code
inline constexpr int value_97 = 97;  // one line of code
inline constexpr int value_98 = 98;  // one line of code
inline constexpr int value_99 = 99;  // one line of code
inline constexpr int value_100 = 100;  // one line of code
inline constexpr int value_101 = 101;  // one line of code
inline constexpr int value_102 = 102;  // one line of code
inline constexpr int value_103 = 103;  // one line of code
inline constexpr int value_104 = 104;  // one line of code
inline constexpr int value_105 = 105;  // one line of code
inline constexpr int value_106 = 106;  // one line of code
inline constexpr int value_107 = 107;  // one line of code
inline constexpr int value_108 = 108;  // one line of code
inline constexpr int value_109 = 109;  // one line of code
inline constexpr int value_110 = 110;  // one line of code
inline constexpr int value_111 = 111;  // one line of code
inline constexpr int value_112 = 112;  // one line of code
inline constexpr int value_113 = 113;  // one line of code
inline constexpr int value_114 = 114;  // one line of code
inline constexpr int value_115 = 115;  // one line of code
inline constexpr int value_116 = 116;  // one line of code
inline constexpr int value_117 = 117;  // one line of code
inline constexpr int value_118 = 118;  // one line of code
inline constexpr int value_119 = 119;  // one line of code
inline constexpr int value_120 = 120;  // one line of code
inline constexpr int value_121 = 121;  // one line of code
inline constexpr int value_122 = 122;  // one line of code
inline constexpr int value_123 = 123;  // one line of code
inline constexpr int value_124 = 124;  // one line of code
inline constexpr int value_125 = 125;  // one line of code
inline constexpr int value_126 = 126;  // one line of code
inline constexpr int value_127 = 127;  // one line of code
inline constexpr int value_128 = 128;  // one line of code
inline constexpr int value_129 = 129;  // one line of code
inline constexpr int value_130 = 130;  // one line of code
inline constexpr int value_131 = 131;  // one line of code
inline constexpr int value_132 = 132;  // one line of code
inline constexpr int value_133 = 133;  // one line of code
inline constexpr int value_134 = 134;  // one line of code
inline constexpr int value_135 = 135;  // one line of code
inline constexpr int value_136 = 136;  // one line of code
inline constexpr int value_137 = 137;  // one line of code
inline constexpr int value_138 = 138;  // one line of code
inline constexpr int value_139 = 139;  // one line of code
inline constexpr int value_140 = 140;  // one line of code
inline constexpr int value_141 = 141;  // one line of code
inline constexpr int value_142 = 142;  // one line of code
inline constexpr int value_143 = 143;  // one line of code
inline constexpr int value_144 = 144;  // one line of code
inline constexpr int value_145 = 145;  // one line of code
inline constexpr int value_146 = 146;  // one line of code
inline constexpr int value_147 = 147;  // one line of code
inline constexpr int value_148 = 148;  // one line of code
inline constexpr int value_149 = 149;  // one line of code
inline constexpr int value_150 = 150;  // one line of code
inline constexpr int value_151 = 151;  // one line of code
inline constexpr int value_152 = 152;  // one line of code
inline constexpr int value_153 = 153;  // one line of code
inline constexpr int value_154 = 154;  // one line of code
inline constexpr int value_155 = 155;  // one line of code
inline constexpr int value_156 = 156;  // one line of code
inline constexpr int value_157 = 157;  // one line of code
inline constexpr int value_158 = 158;  // one line of code
inline constexpr int value_159 = 159;  // one line of code
inline constexpr int value_160 = 160;  // one line of code
inline constexpr int value_161 = 161;  // one line of code
inline constexpr int value_162 = 162;  // one line of code
inline constexpr int value_163 = 163;  // one line of code
inline constexpr int value_164 = 164;  // one line of code
inline constexpr int value_165 = 165;  // one line of code
inline constexpr int value_166 = 166;  // one line of code
inline constexpr int value_167 = 167;  // one line of code
inline constexpr int value_168 = 168;  // one line of code
inline constexpr int value_169 = 169;  // one line of code
inline constexpr int value_170 = 170;  // one line of code
inline constexpr int value_171 = 171;  // one line of code
inline constexpr int value_172 = 172;  // one line of code
inline constexpr int value_173 = 173;  // one line of code
inline constexpr int value_174 = 174;  // one line of code
inline constexpr int value_175 = 175;  // one line of code
inline constexpr int value_176 = 176;  // one line of code
inline constexpr int value_177 = 177;  // one line of code
inline constexpr int value_178 = 178;  // one line of code
inline constexpr int value_179 = 179;  // one line of code
inline constexpr int value_180 = 180;  // one line of code
inline constexpr int value_181 = 181;  // one line of code
inline constexpr int value_182 = 182;  // one line of code
inline constexpr int value_183 = 183;  // one line of code
inline constexpr int value_184 = 184;  // one line of code
inline constexpr int value_185 = 185;  // one line of code
inline constexpr int value_186 = 186;  // one line of code
inline constexpr int value_187 = 187;  // one line of code
inline constexpr int value_188 = 188;  // one line of code
inline constexpr int value_189 = 189;  // one line of code
inline constexpr int value_190 = 190;  // one line of code
inline constexpr int value_191 = 191;  // one line of code
inline constexpr int value_192 = 192;  // one line of code
inline constexpr int value_193 = 193;  // one line of code
inline constexpr int value_194 = 194;  // one line of code
inline constexpr int value_195 = 195;  // one line of code
inline constexpr int value_196 = 196;  // one line of code
inline constexpr int value_197 = 197;  // one line of code
inline constexpr int value_198 = 198;  // one line of code
inline constexpr int value_199 = 199;  // one line of code
inline constexpr int value_200 = 200;  // one line of code
inline constexpr int value_201 = 201;  // one line of code
inline constexpr int value_202 = 202;  // one line of code
inline constexpr int value_203 = 203;  // one line of code
inline constexpr int value_204 = 204;  // one line of code
inline constexpr int value_205 = 205;  // one line of code
inline constexpr int value_206 = 206;  // one line of code
inline constexpr int value_207 = 207;  // one line of code
inline constexpr int value_208 = 208;  // one line of code
inline constexpr int value_209 = 209;  // one line of code
inline constexpr int value_210 = 210;  // one line of code
inline constexpr int value_211 = 211;  // one line of code
inline constexpr int value_212 = 212;  // one line of code
inline constexpr int value_213 = 213;  // one line of code
inline constexpr int value_214 = 214;  // one line of code
inline constexpr int value_215 = 215;  // one line of code
inline constexpr int value_216 = 216;  // one line of code
inline constexpr int value_217 = 217;  // one line of code
inline constexpr int value_218 = 218;  // one line of code
inline constexpr int value_219 = 219;  // one line of code
inline constexpr int value_220 = 220;  // one line of code
inline constexpr int value_221 = 221;  // one line of code
inline constexpr int value_222 = 222;  // one line of code
inline constexpr int value_223 = 223;  // one line of code
inline constexpr int value_224 = 224;  // one line of code
inline constexpr int value_225 = 225;  // one line of code
inline constexpr int value_226 = 226;  // one line of code
inline constexpr int value_227 = 227;  // one line of code
inline constexpr int value_228 = 228;  // one line of code
inline constexpr int value_229 = 229;  // one line of code
inline constexpr int value_230 = 230;  // one line of code
inline constexpr int value_231 = 231;  // one line of code
inline constexpr int value_232 = 232;  // one line of code
inline constexpr int value_233 = 233;  // one line of code
inline constexpr int value_234 = 234;  // one line of code
inline constexpr int value_235 = 235;  // one line of code
inline constexpr int value_236 = 236;  // one line of code
inline constexpr int value_237 = 237;  // one line of code
inline constexpr int value_238 = 238;  // one line of code
inline constexpr int value_239 = 239;  // one line of code
inline constexpr int value_240 = 240;  // one line of code
inline constexpr int value_241 = 241;  // one line of code
inline constexpr int value_242 = 242;  // one line of code
inline constexpr int value_243 = 243;  // one line of code
inline constexpr int value_244 = 244;  // one line of code
inline constexpr int value_245 = 245;  // one line of code
inline constexpr int value_246 = 246;  // one line of code
inline constexpr int value_247 = 247;  // one line of code
inline constexpr int value_248 = 248;  // one line of code
inline constexpr int value_249 = 249;  // one line of code
inline constexpr int value_250 = 250;  // one line of code
inline constexpr int value_251 = 251;  // one line of code
inline constexpr int value_252 = 252;  // one line of code
inline constexpr int value_253 = 253;  // one line of code
inline constexpr int value_254 = 254;  // one line of code
inline constexpr int value_255 = 255;  // one line of code
inline constexpr int value_256 = 256;  // one line of code
inline constexpr int value_257 = 257;  // one line of code
inline constexpr int value_258 = 258;  // one line of code
inline constexpr int value_259 = 259;  // one line of code
inline constexpr int value_260 = 260;  // one line of code
inline constexpr int value_261 = 261;  // one line of code
inline constexpr int value_262 = 262;  // one line of code
inline constexpr int value_263 = 263;  // one line of code
inline constexpr int value_264 = 264;  // one line of code
inline constexpr int value_265 = 265;  // one line of code
inline constexpr int value_266 = 266;  // one line of code
inline constexpr int value_267 = 267;  // one line of code
inline constexpr int value_268 = 268;  // one line of code
inline constexpr int value_269 = 269;  // one line of code
inline constexpr int value_270 = 270;  // one line of code
inline constexpr int value_271 = 271;  // one line of code
inline constexpr int value_272 = 272;  // one line of code
inline constexpr int value_273 = 273;  // one line of code
inline constexpr int value_274 = 274;  // one line of code
inline constexpr int value_275 = 275;  // one line of code
inline constexpr int value_276 = 276;  // one line of code
inline constexpr int value_277 = 277;  // one line of code
inline constexpr int value_278 = 278;  // one line of code
inline constexpr int value_279 = 279;  // one line of code
inline constexpr int value_280 = 280;  // one line of code
inline constexpr int value_281 = 281;  // one line of code
inline constexpr int value_282 = 282;  // one line of code
inline constexpr int value_283 = 283;  // one line of code
inline constexpr int value_284 = 284;  // one line of code
inline constexpr int value_285 = 285;  // one line of code
inline constexpr int value_286 = 286;  // one line of code
inline constexpr int value_287 = 287;  // one line of code
inline constexpr int value_288 = 288;  // one line of code
inline constexpr int value_289 = 289;  // one line of code
inline constexpr int value_290 = 290;  // one line of code
inline constexpr int value_291 = 291;  // one line of code
inline constexpr int value_292 = 292;  // one line of code
inline constexpr int value_293 = 293;  // one line of code
inline constexpr int value_294 = 294;  // one line of code
inline constexpr int value_295 = 295;  // one line of code
inline constexpr int value_296 = 296;  // one line of code
inline constexpr int value_297 = 297;  // one line of code
inline constexpr int value_298 = 298;  // one line of code
inline constexpr int value_299 = 299;  // one line of code
inline constexpr int value_300 = 300;  // one line of code
inline constexpr int value_301 = 301;  // one line of code
inline constexpr int value_302 = 302;  // one line of code
inline constexpr int value_303 = 303;  // one line of code
inline constexpr int value_304 = 304;  // one line of code
inline constexpr int value_305 = 305;  // one line of code
inline constexpr int value_306 = 306;  // one line of code
inline constexpr int value_307 = 307;  // one line of code
inline constexpr int value_308 = 308;  // one line of code
inline constexpr int value_309 = 309;  // one line of code
inline constexpr int value_310 = 310;  // one line of code
inline constexpr int value_311 = 311;  // one line of code
inline constexpr int value_312 = 312;  // one line of code
inline constexpr int value_313 = 313;  // one line of code
inline constexpr int value_314 = 314;  // one line of code
inline constexpr int value_315 = 315;  // one line of code
inline constexpr int value_316 = 316;  // one line of code
inline constexpr int value_317 = 317;  // one line of code
inline constexpr int value_318 = 318;  // one line of code
inline constexpr int value_319 = 319;  // one line of code
inline constexpr int value_320 = 320;  // one line of code
inline constexpr int value_321 = 321;  // one line of code
inline constexpr int value_322 = 322;  // one line of code
inline constexpr int value_323 = 323;  // one line of code
inline constexpr int value_324 = 324;  // one line of code
inline constexpr int value_325 = 325;  // one line of code
inline constexpr int value_326 = 326;  // one line of code
inline constexpr int value_327 = 327;  // one line of code
inline constexpr int value_328 = 328;  // one line of code
inline constexpr int value_329 = 329;  // one line of code
inline constexpr int value_330 = 330;  // one line of code
inline constexpr int value_331 = 331;  // one line of code
inline constexpr int value_332 = 332;  // one line of code
inline constexpr int value_333 = 333;  // one line of code
inline constexpr int value_334 = 334;  // one line of code
inline constexpr int value_335 = 335;  // one line of code
inline constexpr int value_336 = 336;  // one line of code
inline constexpr int value_337 = 337;  // one line of code
inline constexpr int value_338 = 338;  // one line of code
inline constexpr int value_339 = 339;  // one line of code
inline constexpr int value_340 = 340;  // one line of code
inline constexpr int value_341 = 341;  // one line of code
inline constexpr int value_342 = 342;  // one line of code
inline constexpr int value_343 = 343;  // one line of code
inline constexpr int value_344 = 344;  // one line of code
inline constexpr int value_345 = 345;  // one line of code
inline constexpr int value_346 = 346;  // one line of code
inline constexpr int value_347 = 347;  // one line of code
inline constexpr int value_348 = 348;  // one line of code
inline constexpr int value_349 = 349;  // one line of code
inline constexpr int value_350 = 350;  // one line of code
inline constexpr int value_351 = 351;  // one line of code
inline constexpr int value_352 = 352;  // one line of code
inline constexpr int value_353 = 353;  // one line of code
inline constexpr int value_354 = 354;  // one line of code
inline constexpr int value_355 = 355;  // one line of code
inline constexpr int value_356 = 356;  // one line of code
inline constexpr int value_357 = 357;  // one line of code
inline constexpr int value_358 = 358;  // one line of code
inline constexpr int value_359 = 359;  // one line of code
inline constexpr int value_360 = 360;  // one line of code
inline constexpr int value_361 = 361;  // one line of code
inline constexpr int value_362 = 362;  // one line of code
inline constexpr int value_363 = 363;  // one line of code
inline constexpr int value_364 = 364;  // one line of code
inline constexpr int value_365 = 365;  // one line of code
inline constexpr int value_366 = 366;  // one line of code
inline constexpr int value_367 = 367;  // one line of code
inline constexpr int value_368 = 368;  // one line of code
inline constexpr int value_369 = 369;  // one line of code
inline constexpr int value_370 = 370;  // one line of code
inline constexpr int value_371 = 371;  // one line of code
inline constexpr int value_372 = 372;  // one line of code
inline constexpr int value_373 = 373;  // one line of code
inline constexpr int value_374 = 374;  // one line of code
inline constexpr int value_375 = 375;  // one line of code
inline constexpr int value_376 = 376;  // one line of code
inline constexpr int value_377 = 377;  // one line of code
inline constexpr int value_378 = 378;  // one line of code
inline constexpr int value_379 = 379;  // one line of code
inline constexpr int value_380 = 380;  // one line of code
inline constexpr int value_381 = 381;  // one line of code
inline constexpr int value_382 = 382;  // one line of code
inline constexpr int value_383 = 383;  // one line of code
inline constexpr int value_384 = 384;  // one line of code
inline constexpr int value_385 = 385;  // one line of code
inline constexpr int value_386 = 386;  // one line of code
inline constexpr int value_387 = 387;  // one line of code
inline constexpr int value_388 = 388;  // one line of code
inline constexpr int value_389 = 389;  // one line of code
inline constexpr int value_390 = 390;  // one line of code
inline constexpr int value_391 = 391;  // one line of code
inline constexpr int value_392 = 392;  // one line of code
inline constexpr int value_393 = 393;  // one line of code
inline constexpr int value_394 = 394;  // one line of code
inline constexpr int value_395 = 395;  // one line of code
inline constexpr int value_396 = 396;  // one line of code
inline constexpr int value_397 = 397;  // one line of code
inline constexpr int value_398 = 398;  // one line of code
inline constexpr int value_399 = 399;  // one line of code
inline constexpr int value_400 = 400;  // one line of code
inline constexpr int value_401 = 401;  // one line of code
inline constexpr int value_402 = 402;  // one line of code
inline constexpr int value_403 = 403;  // one line of code
inline constexpr int value_404 = 404;  // one line of code
inline constexpr int value_405 = 405;  // one line of code
inline constexpr int value_406 = 406;  // one line of code
inline constexpr int value_407 = 407;  // one line of code
inline constexpr int value_408 = 408;  // one line of code
inline constexpr int value_409 = 409;  // one line of code
inline constexpr int value_410 = 410;  // one line of code
inline constexpr int value_411 = 411;  // one line of code
inline constexpr int value_412 = 412;  // one line of code
inline constexpr int value_413 = 413;  // one line of code
inline constexpr int value_414 = 414;  // one line of code
inline constexpr int value_415 = 415;  // one line of code
inline constexpr int value_416 = 416;  // one line of code
inline constexpr int value_417 = 417;  // one line of code
inline constexpr int value_418 = 418;  // one line of code
inline constexpr int value_419 = 419;  // one line of code
inline constexpr int value_420 = 420;  // one line of code
inline constexpr int value_421 = 421;  // one line of code
inline constexpr int value_422 = 422;  // one line of code
inline constexpr int value_423 = 423;  // one line of code
inline constexpr int value_424 = 424;  // one line of code
inline constexpr int value_425 = 425;  // one line of code
inline constexpr int value_426 = 426;  // one line of code
inline constexpr int value_427 = 427;  // one line of code
inline constexpr int value_428 = 428;  // one line of code
inline constexpr int value_429 = 429;  // one line of code
inline constexpr int value_430 = 430;  // one line of code
inline constexpr int value_431 = 431;  // one line of code
inline constexpr int value_432 = 432;  // one line of code
inline constexpr int value_433 = 433;  // one line of code
inline constexpr int value_434 = 434;  // one line of code
inline constexpr int value_435 = 435;  // one line of code
inline constexpr int value_436 = 436;  // one line of code
inline constexpr int value_437 = 437;  // one line of code
inline constexpr int value_438 = 438;  // one line of code
inline constexpr int value_439 = 439;  // one line of code
inline constexpr int value_440 = 440;  // one line of code
inline constexpr int value_441 = 441;  // one line of code
inline constexpr int value_442 = 442;  // one line of code
inline constexpr int value_443 = 443;  // one line of code
inline constexpr int value_444 = 444;  // one line of code
inline constexpr int value_445 = 445;  // one line of code
inline constexpr int value_446 = 446;  // one line of code
inline constexpr int value_447 = 447;  // one line of code
inline constexpr int value_448 = 448;  // one line of code
inline constexpr int value_449 = 449;  // one line of code
inline constexpr int value_450 = 450;  // one line of code
inline constexpr int value_451 = 451;  // one line of code
inline constexpr int value_452 = 452;  // one line of code
inline constexpr int value_453 = 453;  // one line of code
inline constexpr int value_454 = 454;  // one line of code
inline constexpr int value_455 = 455;  // one line of code
inline constexpr int value_456 = 456;  // one line of code
inline constexpr int value_457 = 457;  // one line of code
inline constexpr int value_458 = 458;  // one line of code
inline constexpr int value_459 = 459;  // one line of code
inline constexpr int value_460 = 460;  // one line of code
inline constexpr int value_461 = 461;  // one line of code
inline constexpr int value_462 = 462;  // one line of code
inline constexpr int value_463 = 463;  // one line of code
inline constexpr int value_464 = 464;  // one line of code
inline constexpr int value_465 = 465;  // one line of code
inline constexpr int value_466 = 466;  // one line of code
inline constexpr int value_467 = 467;  // one line of code
inline constexpr int value_468 = 468;  // one line of code
inline constexpr int value_469 = 469;  // one line of code
inline constexpr int value_470 = 470;  // one line of code
inline constexpr int value_471 = 471;  // one line of code
inline constexpr int value_472 = 472;  // one line of code
inline constexpr int value_473 = 473;  // one line of code
inline constexpr int value_474 = 474;  // one line of code
inline constexpr int value_475 = 475;  // one line of code
inline constexpr int value_476 = 476;  // one line of code
inline constexpr int value_477 = 477;  // one line of code
inline constexpr int value_478 = 478;  // one line of code
inline constexpr int value_479 = 479;  // one line of code
inline constexpr int value_480 = 480;  // one line of code
inline constexpr int value_481 = 481;  // one line of code
inline constexpr int value_482 = 482;  // one line of code
inline constexpr int value_483 = 483;  // one line of code
inline constexpr int value_484 = 484;  // one line of code
inline constexpr int value_485 = 485;  // one line of code
inline constexpr int value_486 = 486;  // one line of code
inline constexpr int value_487 = 487;  // one line of code
inline constexpr int value_488 = 488;  // one line of code
inline constexpr int value_489 = 489;  // one line of code
inline constexpr int value_490 = 490;  // one line of code
inline constexpr int value_491 = 491;  // one line of code
inline constexpr int value_492 = 492;  // one line of code
inline constexpr int value_493 = 493;  // one line of code
inline constexpr int value_494 = 494;  // one line of code
inline constexpr int value_495 = 495;  // one line of code
inline constexpr int value_496 = 496;  // one line of code
inline constexpr int value_497 = 497;  // one line of code
inline constexpr int value_498 = 498;  // one line of code
inline constexpr int value_499 = 499;  // one line of code
/* a block comment
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 * does not count
 */
