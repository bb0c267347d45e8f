#pragma once
/// @file well_commented.hpp
/// @brief A fixture for headers.size_caught: 700 lines, 500 of code; it must not be reported.

// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
// Why the code below is as it is, at length.
inline constexpr int commented_0 = 0;
inline constexpr int commented_1 = 1;
inline constexpr int commented_2 = 2;
inline constexpr int commented_3 = 3;
inline constexpr int commented_4 = 4;
inline constexpr int commented_5 = 5;
inline constexpr int commented_6 = 6;
inline constexpr int commented_7 = 7;
inline constexpr int commented_8 = 8;
inline constexpr int commented_9 = 9;
inline constexpr int commented_10 = 10;
inline constexpr int commented_11 = 11;
inline constexpr int commented_12 = 12;
inline constexpr int commented_13 = 13;
inline constexpr int commented_14 = 14;
inline constexpr int commented_15 = 15;
inline constexpr int commented_16 = 16;
inline constexpr int commented_17 = 17;
inline constexpr int commented_18 = 18;
inline constexpr int commented_19 = 19;
inline constexpr int commented_20 = 20;
inline constexpr int commented_21 = 21;
inline constexpr int commented_22 = 22;
inline constexpr int commented_23 = 23;
inline constexpr int commented_24 = 24;
inline constexpr int commented_25 = 25;
inline constexpr int commented_26 = 26;
inline constexpr int commented_27 = 27;
inline constexpr int commented_28 = 28;
inline constexpr int commented_29 = 29;
inline constexpr int commented_30 = 30;
inline constexpr int commented_31 = 31;
inline constexpr int commented_32 = 32;
inline constexpr int commented_33 = 33;
inline constexpr int commented_34 = 34;
inline constexpr int commented_35 = 35;
inline constexpr int commented_36 = 36;
inline constexpr int commented_37 = 37;
inline constexpr int commented_38 = 38;
inline constexpr int commented_39 = 39;
inline constexpr int commented_40 = 40;
inline constexpr int commented_41 = 41;
inline constexpr int commented_42 = 42;
inline constexpr int commented_43 = 43;
inline constexpr int commented_44 = 44;
inline constexpr int commented_45 = 45;
inline constexpr int commented_46 = 46;
inline constexpr int commented_47 = 47;
inline constexpr int commented_48 = 48;
inline constexpr int commented_49 = 49;
inline constexpr int commented_50 = 50;
inline constexpr int commented_51 = 51;
inline constexpr int commented_52 = 52;
inline constexpr int commented_53 = 53;
inline constexpr int commented_54 = 54;
inline constexpr int commented_55 = 55;
inline constexpr int commented_56 = 56;
inline constexpr int commented_57 = 57;
inline constexpr int commented_58 = 58;
inline constexpr int commented_59 = 59;
inline constexpr int commented_60 = 60;
inline constexpr int commented_61 = 61;
inline constexpr int commented_62 = 62;
inline constexpr int commented_63 = 63;
inline constexpr int commented_64 = 64;
inline constexpr int commented_65 = 65;
inline constexpr int commented_66 = 66;
inline constexpr int commented_67 = 67;
inline constexpr int commented_68 = 68;
inline constexpr int commented_69 = 69;
inline constexpr int commented_70 = 70;
inline constexpr int commented_71 = 71;
inline constexpr int commented_72 = 72;
inline constexpr int commented_73 = 73;
inline constexpr int commented_74 = 74;
inline constexpr int commented_75 = 75;
inline constexpr int commented_76 = 76;
inline constexpr int commented_77 = 77;
inline constexpr int commented_78 = 78;
inline constexpr int commented_79 = 79;
inline constexpr int commented_80 = 80;
inline constexpr int commented_81 = 81;
inline constexpr int commented_82 = 82;
inline constexpr int commented_83 = 83;
inline constexpr int commented_84 = 84;
inline constexpr int commented_85 = 85;
inline constexpr int commented_86 = 86;
inline constexpr int commented_87 = 87;
inline constexpr int commented_88 = 88;
inline constexpr int commented_89 = 89;
inline constexpr int commented_90 = 90;
inline constexpr int commented_91 = 91;
inline constexpr int commented_92 = 92;
inline constexpr int commented_93 = 93;
inline constexpr int commented_94 = 94;
inline constexpr int commented_95 = 95;
inline constexpr int commented_96 = 96;
inline constexpr int commented_97 = 97;
inline constexpr int commented_98 = 98;
inline constexpr int commented_99 = 99;
inline constexpr int commented_100 = 100;
inline constexpr int commented_101 = 101;
inline constexpr int commented_102 = 102;
inline constexpr int commented_103 = 103;
inline constexpr int commented_104 = 104;
inline constexpr int commented_105 = 105;
inline constexpr int commented_106 = 106;
inline constexpr int commented_107 = 107;
inline constexpr int commented_108 = 108;
inline constexpr int commented_109 = 109;
inline constexpr int commented_110 = 110;
inline constexpr int commented_111 = 111;
inline constexpr int commented_112 = 112;
inline constexpr int commented_113 = 113;
inline constexpr int commented_114 = 114;
inline constexpr int commented_115 = 115;
inline constexpr int commented_116 = 116;
inline constexpr int commented_117 = 117;
inline constexpr int commented_118 = 118;
inline constexpr int commented_119 = 119;
inline constexpr int commented_120 = 120;
inline constexpr int commented_121 = 121;
inline constexpr int commented_122 = 122;
inline constexpr int commented_123 = 123;
inline constexpr int commented_124 = 124;
inline constexpr int commented_125 = 125;
inline constexpr int commented_126 = 126;
inline constexpr int commented_127 = 127;
inline constexpr int commented_128 = 128;
inline constexpr int commented_129 = 129;
inline constexpr int commented_130 = 130;
inline constexpr int commented_131 = 131;
inline constexpr int commented_132 = 132;
inline constexpr int commented_133 = 133;
inline constexpr int commented_134 = 134;
inline constexpr int commented_135 = 135;
inline constexpr int commented_136 = 136;
inline constexpr int commented_137 = 137;
inline constexpr int commented_138 = 138;
inline constexpr int commented_139 = 139;
inline constexpr int commented_140 = 140;
inline constexpr int commented_141 = 141;
inline constexpr int commented_142 = 142;
inline constexpr int commented_143 = 143;
inline constexpr int commented_144 = 144;
inline constexpr int commented_145 = 145;
inline constexpr int commented_146 = 146;
inline constexpr int commented_147 = 147;
inline constexpr int commented_148 = 148;
inline constexpr int commented_149 = 149;
inline constexpr int commented_150 = 150;
inline constexpr int commented_151 = 151;
inline constexpr int commented_152 = 152;
inline constexpr int commented_153 = 153;
inline constexpr int commented_154 = 154;
inline constexpr int commented_155 = 155;
inline constexpr int commented_156 = 156;
inline constexpr int commented_157 = 157;
inline constexpr int commented_158 = 158;
inline constexpr int commented_159 = 159;
inline constexpr int commented_160 = 160;
inline constexpr int commented_161 = 161;
inline constexpr int commented_162 = 162;
inline constexpr int commented_163 = 163;
inline constexpr int commented_164 = 164;
inline constexpr int commented_165 = 165;
inline constexpr int commented_166 = 166;
inline constexpr int commented_167 = 167;
inline constexpr int commented_168 = 168;
inline constexpr int commented_169 = 169;
inline constexpr int commented_170 = 170;
inline constexpr int commented_171 = 171;
inline constexpr int commented_172 = 172;
inline constexpr int commented_173 = 173;
inline constexpr int commented_174 = 174;
inline constexpr int commented_175 = 175;
inline constexpr int commented_176 = 176;
inline constexpr int commented_177 = 177;
inline constexpr int commented_178 = 178;
inline constexpr int commented_179 = 179;
inline constexpr int commented_180 = 180;
inline constexpr int commented_181 = 181;
inline constexpr int commented_182 = 182;
inline constexpr int commented_183 = 183;
inline constexpr int commented_184 = 184;
inline constexpr int commented_185 = 185;
inline constexpr int commented_186 = 186;
inline constexpr int commented_187 = 187;
inline constexpr int commented_188 = 188;
inline constexpr int commented_189 = 189;
inline constexpr int commented_190 = 190;
inline constexpr int commented_191 = 191;
inline constexpr int commented_192 = 192;
inline constexpr int commented_193 = 193;
inline constexpr int commented_194 = 194;
inline constexpr int commented_195 = 195;
inline constexpr int commented_196 = 196;
inline constexpr int commented_197 = 197;
inline constexpr int commented_198 = 198;
inline constexpr int commented_199 = 199;
inline constexpr int commented_200 = 200;
inline constexpr int commented_201 = 201;
inline constexpr int commented_202 = 202;
inline constexpr int commented_203 = 203;
inline constexpr int commented_204 = 204;
inline constexpr int commented_205 = 205;
inline constexpr int commented_206 = 206;
inline constexpr int commented_207 = 207;
inline constexpr int commented_208 = 208;
inline constexpr int commented_209 = 209;
inline constexpr int commented_210 = 210;
inline constexpr int commented_211 = 211;
inline constexpr int commented_212 = 212;
inline constexpr int commented_213 = 213;
inline constexpr int commented_214 = 214;
inline constexpr int commented_215 = 215;
inline constexpr int commented_216 = 216;
inline constexpr int commented_217 = 217;
inline constexpr int commented_218 = 218;
inline constexpr int commented_219 = 219;
inline constexpr int commented_220 = 220;
inline constexpr int commented_221 = 221;
inline constexpr int commented_222 = 222;
inline constexpr int commented_223 = 223;
inline constexpr int commented_224 = 224;
inline constexpr int commented_225 = 225;
inline constexpr int commented_226 = 226;
inline constexpr int commented_227 = 227;
inline constexpr int commented_228 = 228;
inline constexpr int commented_229 = 229;
inline constexpr int commented_230 = 230;
inline constexpr int commented_231 = 231;
inline constexpr int commented_232 = 232;
inline constexpr int commented_233 = 233;
inline constexpr int commented_234 = 234;
inline constexpr int commented_235 = 235;
inline constexpr int commented_236 = 236;
inline constexpr int commented_237 = 237;
inline constexpr int commented_238 = 238;
inline constexpr int commented_239 = 239;
inline constexpr int commented_240 = 240;
inline constexpr int commented_241 = 241;
inline constexpr int commented_242 = 242;
inline constexpr int commented_243 = 243;
inline constexpr int commented_244 = 244;
inline constexpr int commented_245 = 245;
inline constexpr int commented_246 = 246;
inline constexpr int commented_247 = 247;
inline constexpr int commented_248 = 248;
inline constexpr int commented_249 = 249;
inline constexpr int commented_250 = 250;
inline constexpr int commented_251 = 251;
inline constexpr int commented_252 = 252;
inline constexpr int commented_253 = 253;
inline constexpr int commented_254 = 254;
inline constexpr int commented_255 = 255;
inline constexpr int commented_256 = 256;
inline constexpr int commented_257 = 257;
inline constexpr int commented_258 = 258;
inline constexpr int commented_259 = 259;
inline constexpr int commented_260 = 260;
inline constexpr int commented_261 = 261;
inline constexpr int commented_262 = 262;
inline constexpr int commented_263 = 263;
inline constexpr int commented_264 = 264;
inline constexpr int commented_265 = 265;
inline constexpr int commented_266 = 266;
inline constexpr int commented_267 = 267;
inline constexpr int commented_268 = 268;
inline constexpr int commented_269 = 269;
inline constexpr int commented_270 = 270;
inline constexpr int commented_271 = 271;
inline constexpr int commented_272 = 272;
inline constexpr int commented_273 = 273;
inline constexpr int commented_274 = 274;
inline constexpr int commented_275 = 275;
inline constexpr int commented_276 = 276;
inline constexpr int commented_277 = 277;
inline constexpr int commented_278 = 278;
inline constexpr int commented_279 = 279;
inline constexpr int commented_280 = 280;
inline constexpr int commented_281 = 281;
inline constexpr int commented_282 = 282;
inline constexpr int commented_283 = 283;
inline constexpr int commented_284 = 284;
inline constexpr int commented_285 = 285;
inline constexpr int commented_286 = 286;
inline constexpr int commented_287 = 287;
inline constexpr int commented_288 = 288;
inline constexpr int commented_289 = 289;
inline constexpr int commented_290 = 290;
inline constexpr int commented_291 = 291;
inline constexpr int commented_292 = 292;
inline constexpr int commented_293 = 293;
inline constexpr int commented_294 = 294;
inline constexpr int commented_295 = 295;
inline constexpr int commented_296 = 296;
inline constexpr int commented_297 = 297;
inline constexpr int commented_298 = 298;
inline constexpr int commented_299 = 299;
inline constexpr int commented_300 = 300;
inline constexpr int commented_301 = 301;
inline constexpr int commented_302 = 302;
inline constexpr int commented_303 = 303;
inline constexpr int commented_304 = 304;
inline constexpr int commented_305 = 305;
inline constexpr int commented_306 = 306;
inline constexpr int commented_307 = 307;
inline constexpr int commented_308 = 308;
inline constexpr int commented_309 = 309;
inline constexpr int commented_310 = 310;
inline constexpr int commented_311 = 311;
inline constexpr int commented_312 = 312;
inline constexpr int commented_313 = 313;
inline constexpr int commented_314 = 314;
inline constexpr int commented_315 = 315;
inline constexpr int commented_316 = 316;
inline constexpr int commented_317 = 317;
inline constexpr int commented_318 = 318;
inline constexpr int commented_319 = 319;
inline constexpr int commented_320 = 320;
inline constexpr int commented_321 = 321;
inline constexpr int commented_322 = 322;
inline constexpr int commented_323 = 323;
inline constexpr int commented_324 = 324;
inline constexpr int commented_325 = 325;
inline constexpr int commented_326 = 326;
inline constexpr int commented_327 = 327;
inline constexpr int commented_328 = 328;
inline constexpr int commented_329 = 329;
inline constexpr int commented_330 = 330;
inline constexpr int commented_331 = 331;
inline constexpr int commented_332 = 332;
inline constexpr int commented_333 = 333;
inline constexpr int commented_334 = 334;
inline constexpr int commented_335 = 335;
inline constexpr int commented_336 = 336;
inline constexpr int commented_337 = 337;
inline constexpr int commented_338 = 338;
inline constexpr int commented_339 = 339;
inline constexpr int commented_340 = 340;
inline constexpr int commented_341 = 341;
inline constexpr int commented_342 = 342;
inline constexpr int commented_343 = 343;
inline constexpr int commented_344 = 344;
inline constexpr int commented_345 = 345;
inline constexpr int commented_346 = 346;
inline constexpr int commented_347 = 347;
inline constexpr int commented_348 = 348;
inline constexpr int commented_349 = 349;
inline constexpr int commented_350 = 350;
inline constexpr int commented_351 = 351;
inline constexpr int commented_352 = 352;
inline constexpr int commented_353 = 353;
inline constexpr int commented_354 = 354;
inline constexpr int commented_355 = 355;
inline constexpr int commented_356 = 356;
inline constexpr int commented_357 = 357;
inline constexpr int commented_358 = 358;
inline constexpr int commented_359 = 359;
inline constexpr int commented_360 = 360;
inline constexpr int commented_361 = 361;
inline constexpr int commented_362 = 362;
inline constexpr int commented_363 = 363;
inline constexpr int commented_364 = 364;
inline constexpr int commented_365 = 365;
inline constexpr int commented_366 = 366;
inline constexpr int commented_367 = 367;
inline constexpr int commented_368 = 368;
inline constexpr int commented_369 = 369;
inline constexpr int commented_370 = 370;
inline constexpr int commented_371 = 371;
inline constexpr int commented_372 = 372;
inline constexpr int commented_373 = 373;
inline constexpr int commented_374 = 374;
inline constexpr int commented_375 = 375;
inline constexpr int commented_376 = 376;
inline constexpr int commented_377 = 377;
inline constexpr int commented_378 = 378;
inline constexpr int commented_379 = 379;
inline constexpr int commented_380 = 380;
inline constexpr int commented_381 = 381;
inline constexpr int commented_382 = 382;
inline constexpr int commented_383 = 383;
inline constexpr int commented_384 = 384;
inline constexpr int commented_385 = 385;
inline constexpr int commented_386 = 386;
inline constexpr int commented_387 = 387;
inline constexpr int commented_388 = 388;
inline constexpr int commented_389 = 389;
inline constexpr int commented_390 = 390;
inline constexpr int commented_391 = 391;
inline constexpr int commented_392 = 392;
inline constexpr int commented_393 = 393;
inline constexpr int commented_394 = 394;
inline constexpr int commented_395 = 395;
inline constexpr int commented_396 = 396;
inline constexpr int commented_397 = 397;
inline constexpr int commented_398 = 398;
inline constexpr int commented_399 = 399;
inline constexpr int commented_400 = 400;
inline constexpr int commented_401 = 401;
inline constexpr int commented_402 = 402;
inline constexpr int commented_403 = 403;
inline constexpr int commented_404 = 404;
inline constexpr int commented_405 = 405;
inline constexpr int commented_406 = 406;
inline constexpr int commented_407 = 407;
inline constexpr int commented_408 = 408;
inline constexpr int commented_409 = 409;
inline constexpr int commented_410 = 410;
inline constexpr int commented_411 = 411;
inline constexpr int commented_412 = 412;
inline constexpr int commented_413 = 413;
inline constexpr int commented_414 = 414;
inline constexpr int commented_415 = 415;
inline constexpr int commented_416 = 416;
inline constexpr int commented_417 = 417;
inline constexpr int commented_418 = 418;
inline constexpr int commented_419 = 419;
inline constexpr int commented_420 = 420;
inline constexpr int commented_421 = 421;
inline constexpr int commented_422 = 422;
inline constexpr int commented_423 = 423;
inline constexpr int commented_424 = 424;
inline constexpr int commented_425 = 425;
inline constexpr int commented_426 = 426;
inline constexpr int commented_427 = 427;
inline constexpr int commented_428 = 428;
inline constexpr int commented_429 = 429;
inline constexpr int commented_430 = 430;
inline constexpr int commented_431 = 431;
inline constexpr int commented_432 = 432;
inline constexpr int commented_433 = 433;
inline constexpr int commented_434 = 434;
inline constexpr int commented_435 = 435;
inline constexpr int commented_436 = 436;
inline constexpr int commented_437 = 437;
inline constexpr int commented_438 = 438;
inline constexpr int commented_439 = 439;
inline constexpr int commented_440 = 440;
inline constexpr int commented_441 = 441;
inline constexpr int commented_442 = 442;
inline constexpr int commented_443 = 443;
inline constexpr int commented_444 = 444;
inline constexpr int commented_445 = 445;
inline constexpr int commented_446 = 446;
inline constexpr int commented_447 = 447;
inline constexpr int commented_448 = 448;
inline constexpr int commented_449 = 449;
inline constexpr int commented_450 = 450;
inline constexpr int commented_451 = 451;
inline constexpr int commented_452 = 452;
inline constexpr int commented_453 = 453;
inline constexpr int commented_454 = 454;
inline constexpr int commented_455 = 455;
inline constexpr int commented_456 = 456;
inline constexpr int commented_457 = 457;
inline constexpr int commented_458 = 458;
inline constexpr int commented_459 = 459;
inline constexpr int commented_460 = 460;
inline constexpr int commented_461 = 461;
inline constexpr int commented_462 = 462;
inline constexpr int commented_463 = 463;
inline constexpr int commented_464 = 464;
inline constexpr int commented_465 = 465;
inline constexpr int commented_466 = 466;
inline constexpr int commented_467 = 467;
inline constexpr int commented_468 = 468;
inline constexpr int commented_469 = 469;
inline constexpr int commented_470 = 470;
inline constexpr int commented_471 = 471;
inline constexpr int commented_472 = 472;
inline constexpr int commented_473 = 473;
inline constexpr int commented_474 = 474;
inline constexpr int commented_475 = 475;
inline constexpr int commented_476 = 476;
inline constexpr int commented_477 = 477;
inline constexpr int commented_478 = 478;
inline constexpr int commented_479 = 479;
inline constexpr int commented_480 = 480;
inline constexpr int commented_481 = 481;
inline constexpr int commented_482 = 482;
inline constexpr int commented_483 = 483;
inline constexpr int commented_484 = 484;
inline constexpr int commented_485 = 485;
inline constexpr int commented_486 = 486;
inline constexpr int commented_487 = 487;
inline constexpr int commented_488 = 488;
inline constexpr int commented_489 = 489;
inline constexpr int commented_490 = 490;
inline constexpr int commented_491 = 491;
inline constexpr int commented_492 = 492;
inline constexpr int commented_493 = 493;
inline constexpr int commented_494 = 494;
inline constexpr int commented_495 = 495;
inline constexpr int commented_496 = 496;
inline constexpr int commented_497 = 497;
inline constexpr int commented_498 = 498;
































































































